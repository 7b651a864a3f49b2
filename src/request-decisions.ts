import type { DecisionEvent } from './directive';

/*
 * The decisions made while one request executes, keyed by its context object, so that the
 * Apollo plugin can turn them into headers once the response is ready. A WeakMap: nothing is
 * kept once the request (and so its context) is gone.
 */
const byContext = new WeakMap<object, DecisionEvent[]>();

/** Remembers `event` for the request whose context is `context` (when it is an object). */
export function recordDecision(context: unknown, event: DecisionEvent): void {
  if (typeof context !== 'object' || context === null) return;
  const list = byContext.get(context);
  if (list) list.push(event);
  else byContext.set(context, [event]);
}

/** Every decision made for the request whose context is `context`, in order. */
export function decisionsOf(context: unknown): readonly DecisionEvent[] {
  if (typeof context !== 'object' || context === null) return [];
  return byContext.get(context) ?? [];
}
