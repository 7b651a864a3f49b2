import { within as bounded } from '../../server/src/deadline';

export { freePort, sleep, startProcess, stopAll, waitFor, type Child } from '../../kit/processes';

/** `promise`, or a rejection naming `what` once `ms` have passed. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return bounded(promise, ms).catch((error: Error) => {
    throw new Error(`${what}: ${error.message}`);
  });
}
