/**
 * `graphql-atomic-rate-limit/cost`: the operation cost estimator the budget prices with, for a
 * server that prices operations itself (a ceiling per operation, a log line, a test). The IBM
 * cost spec's `@cost` and `@listSize`, with Apollo Router's defaults.
 */
export { costTypeDefs } from './directives';
export { checkCostDirectives } from './check';
export { createCostEstimator, estimateCost, COST_DEFAULTS } from './estimate';
export type { CostEstimator, CostOptions, EstimateOptions } from './estimate';
export { actualCost } from './actual';
export type { ActualCostOptions } from './actual';
export { CostQueryError, CostVariablesError } from './errors';
export type { CostQueryReason } from './errors';
export { MAX_DEPTH as COST_MAX_DEPTH, MAX_WORK as COST_MAX_WORK } from './bounds';
export type { Variables as CostVariables } from './input-cost';
