import { unref } from './runtime';

/**
 * Settles with `promise`, or rejects with `onTimeout()` once `timeoutMs` have passed. The late
 * promise is left to settle on its own: its rejection is swallowed so that a call that outlives
 * its caller can never surface as an unhandled rejection.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  timeoutMs: number,
  onTimeout: () => Error = () => new Error(`Timed out after ${timeoutMs} ms`),
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), timeoutMs);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A deadline still to be met; `reject` is dropped once its call answered or it ran out, so that
 * the queue holds no settled call's promise (and what its value reaches) until the timer comes.
 */
interface Deadline {
  readonly atMs: number;
  reject: ((error: Error) => void) | undefined;
}

/**
 * `withTimeout` for many calls that share one `timeoutMs`, with one timer for all of them
 * instead of a timer and a race per call: deadlines join a queue in the order they are set,
 * which is also the order they fall due, and the one timer is armed for the oldest. Calls that
 * answer in time cost a queue entry; the timer skips them when it comes to them.
 */
export function createDeadlines(
  timeoutMs: number,
  onTimeout: () => Error,
): <T>(promise: Promise<T>) => Promise<T> {
  let queue: Deadline[] = [];
  let head = 0;
  let timer: NodeJS.Timeout | undefined;

  const expire = (): void => {
    timer = undefined;
    const nowMs = performance.now();
    while (head < queue.length) {
      const deadline = queue[head] as Deadline;
      const { reject } = deadline;
      if (reject && deadline.atMs > nowMs) break;
      head++;
      if (reject) {
        deadline.reject = undefined;
        reject(onTimeout());
      }
    }
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else {
      if (head > 1024) {
        queue = queue.slice(head);
        head = 0;
      }
      arm(nowMs);
    }
  };

  const arm = (nowMs: number): void => {
    const next = queue[head];
    if (timer !== undefined || next === undefined) return;
    timer = setTimeout(expire, Math.max(0, next.atMs - nowMs));
    unref(timer);
  };

  return <T>(promise: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const nowMs = performance.now();
      const deadline: Deadline = { atMs: nowMs + timeoutMs, reject };
      queue.push(deadline);
      arm(nowMs);
      promise.then(
        (value) => {
          if (!deadline.reject) return;
          deadline.reject = undefined;
          resolve(value);
        },
        (error: unknown) => {
          if (!deadline.reject) return;
          deadline.reject = undefined;
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
}
