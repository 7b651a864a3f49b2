import { ALGORITHMS } from '../../src';

/**
 * The algorithms that count hits over time: every one but CONCURRENCY, whose slots are held by a
 * call and released when it ends (test/concurrency). Tests of windows, refunds, budgets and
 * schedules of hits run on these.
 */
export const RATE_ALGORITHMS = ALGORITHMS.filter((a) => a !== 'CONCURRENCY');
