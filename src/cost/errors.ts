import { GraphQLError } from 'graphql';

/**
 * The operation cannot be priced: a field with `@listSize(requireOneSlicingArgument: true)` got
 * none or several of its slicing arguments, or the operation to price is ambiguous or unknown.
 * The code is the one Apollo Router, Hive and Caliban give for the same refusal.
 */
export class CostQueryError extends GraphQLError {
  constructor(message: string) {
    super(message, { extensions: { code: 'COST_QUERY_PARSE_FAILURE' } });
    this.name = 'CostQueryError';
  }
}
