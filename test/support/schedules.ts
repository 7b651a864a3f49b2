import fc from 'fast-check';

/*
 * Random schedules of hits for the schedule tests: when to fire how many hits together, so
 * that the reference model (model.ts) sees every limit saturated across window boundaries.
 */

/** One step of a schedule: `size` hits fired together, in one tick, `atMs` after the start. */
export interface Step {
  readonly atMs: number;
  readonly size: number;
}

/** A schedule for one limit: the limit it runs against and its steps, in time order. */
export interface Schedule {
  readonly limit: number;
  readonly plan: readonly Step[];
}

/** The last step fires at most this long after the first. */
export const TIME_BUDGET_MS = 2_300;
/** Hits per schedule, at most. */
export const MAX_HITS = 70;

/**
 * Schedules for hits of `cost` against a limit of 3, 6 or 7 (6 or 7 for cost 2) per 1 s window,
 * none of which divides a second into whole microseconds. A run opens with a burst above the
 * limit (a fresh limit is whole, so one unit too many shows there first), then single hits and
 * small bursts 0-80 ms apart, which keep every limit saturated across the window boundaries;
 * once, it pauses 150-700 ms (a partial refill) and bursts again.
 */
export function scheduleArb(cost: number): fc.Arbitrary<Schedule> {
  return fc
    .record({
      limit: cost === 1 ? fc.constantFrom(3, 6, 7) : fc.constantFrom(6, 7),
      opening: fc.integer({ min: 1, max: 3 }),
      steps: fc.array(
        fc.record({
          gap: fc.integer({ min: 0, max: 80 }),
          size: fc.constantFrom(1, 1, 1, 1, 1, 1, 2, 3),
        }),
        { minLength: 50, maxLength: 60 },
      ),
      pause: fc.record({
        at: fc.integer({ min: 5, max: 35 }),
        length: fc.integer({ min: 150, max: 700 }),
        burst: fc.integer({ min: 1, max: 3 }),
      }),
    })
    .map(({ limit, opening, steps, pause }) => {
      const plan: Step[] = [{ atMs: 0, size: limit + opening }];
      let at = 0;
      let hits = limit + opening;
      steps.forEach((step, i) => {
        const next =
          i === pause.at
            ? { atMs: at + pause.length, size: limit + pause.burst }
            : { atMs: at + step.gap, size: step.size };
        if (next.atMs > TIME_BUDGET_MS || hits + next.size > MAX_HITS) return;
        plan.push(next);
        at = next.atMs;
        hits += next.size;
      });
      return { limit, plan };
    });
}
