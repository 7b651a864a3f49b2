import { unref } from '../runtime';

/**
 * A deadline still to be met; `reject` is dropped once its call answered or it ran out, so that
 * the queue holds no settled call's promise (and what its value reaches) until the timer comes.
 */
interface Deadline {
  readonly atMs: number;
  reject: ((error: Error) => void) | undefined;
}

/**
 * Settles each call with its promise, or rejects it with `onTimeout()` once `timeoutMs` have
 * passed; the late promise is left to settle on its own, its rejection swallowed, so that a call
 * that outlives its caller never surfaces as an unhandled rejection. Many calls share one
 * `timeoutMs` and one timer, rather than a timer and a race per call: deadlines join a queue in the order they are set,
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

  // Timers run before a pass of the event loop reads its sockets: after a stall (other work, a
  // busy host), an answer may be waiting unread when its deadline comes. The calls found due are
  // refused after this pass has read what arrived (setImmediate), so an answer already here is
  // taken, and a call with none is refused a pass later.
  const refuse = (due: readonly Deadline[]): void => {
    for (const deadline of due) {
      const { reject } = deadline;
      if (!reject) continue;
      deadline.reject = undefined;
      reject(onTimeout());
    }
  };

  const expire = (): void => {
    timer = undefined;
    const nowMs = performance.now();
    const due: Deadline[] = [];
    while (head < queue.length) {
      const deadline = queue[head] as Deadline;
      if (deadline.reject && deadline.atMs > nowMs) break;
      head++;
      if (deadline.reject) due.push(deadline);
    }
    if (due.length > 0) setImmediate(refuse, due);
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
