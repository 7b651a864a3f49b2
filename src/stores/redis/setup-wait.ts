import { unref } from '../../runtime';

/*
 * How long hits wait for a store's set-up (setup.ts): while it progresses, and at most an
 * allowance of the event loop's free time since it began or last made a step. Free time, not
 * wall time: a process that is busy (a burst of requests parsed at once, a host whose cores are
 * taken) cannot read the set-up's replies either, and a stall must not spend the allowance of a
 * set-up that could not move meanwhile. The loop is looked at every TICK_MS while hits wait, and
 * a gap between two looks counts as at most two ticks; while no hit waits, time counts whole.
 */

const TICK_MS = 100;

/**
 * Calls `fire` once the event loop has been free for `ms` from now (a stall counts as at most two
 * ticks); the function returned cancels. For the set-up's own deadlines: a connection whose
 * `connect` waits unread behind a stall has not failed.
 */
export function afterFreeTime(ms: number, fire: () => void): () => void {
  let freeMs = 0;
  let lastMs = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    freeMs += Math.min(now - lastMs, 2 * TICK_MS);
    lastMs = now;
    if (freeMs < ms) return;
    clearInterval(ticker);
    fire();
  }, TICK_MS);
  unref(ticker);
  return () => clearInterval(ticker);
}

/** The wait of the hits made during one connection's set-up. */
export interface SetupWait {
  /** A set-up is under way from now (no change when one already is). */
  readonly begin: () => void;
  /** The set-up under way made a step: its allowance starts again. */
  readonly step: () => void;
  /** Lets every waiting hit go (an attempt failed); the set-up stays under way. */
  readonly release: () => void;
  /** No set-up is under way (done, or the connection dropped): every waiting hit goes. */
  readonly end: () => void;
  /**
   * While a set-up is under way and has used less than `waitMs` of free time since it began or
   * last made a step: a promise that resolves, never rejects, once it ends, is released, or uses
   * its allowance up. Otherwise undefined.
   */
  readonly wait: (waitMs: number) => Promise<void> | undefined;
}

export function setupWait(): SetupWait {
  let underWay = false;
  let freeMs = 0;
  let lastMs = 0;
  let ticker: NodeJS.Timeout | undefined;
  /** The hits waiting, by allowance. */
  const gates = new Map<number, { readonly promise: Promise<void>; readonly open: () => void }>();

  // only the ticks count while hits wait: a stall is one gap between two ticks, however many
  // hits arrive during it
  const count = (): void => {
    const now = performance.now();
    const gap = now - lastMs;
    freeMs += ticker === undefined ? gap : Math.min(gap, 2 * TICK_MS);
    lastMs = now;
  };
  const release = (): void => {
    for (const gate of gates.values()) gate.open();
    gates.clear();
    if (ticker !== undefined) clearInterval(ticker);
    ticker = undefined;
  };
  const tick = (): void => {
    count();
    for (const [waitMs, gate] of gates) {
      if (freeMs < waitMs) continue;
      gates.delete(waitMs);
      gate.open();
    }
    if (gates.size === 0) release();
  };

  return {
    begin: () => {
      if (underWay) return;
      underWay = true;
      freeMs = 0;
      lastMs = performance.now();
    },
    step: () => {
      freeMs = 0;
      lastMs = performance.now();
    },
    release,
    end: () => {
      underWay = false;
      release();
    },
    wait: (waitMs) => {
      if (!underWay) return undefined;
      if (ticker === undefined) count();
      if (freeMs >= waitMs) return undefined;
      let gate = gates.get(waitMs);
      if (!gate) {
        let open!: () => void;
        const promise = new Promise<void>((resolve) => (open = resolve));
        gates.set(waitMs, (gate = { promise, open }));
      }
      ticker ??= setInterval(tick, TICK_MS);
      return gate.promise;
    },
  };
}
