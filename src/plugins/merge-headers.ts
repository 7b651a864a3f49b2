/** The part of a Fetch API `Headers` (or Apollo's `HeaderMap`) merging reads. */
export interface ReadableHeaders {
  get(name: string): string | null | undefined;
}

/**
 * The rate-limit headers a response should end with, given those it already carries (a
 * gateway's, copied from its subgraphs' responses, one after the other) and `ours` (this
 * server's report): merged, never overwritten, so a client sees the subgraphs' field limits
 * beside the gateway's budget.
 *
 * - `RateLimit-Policy`: every policy, each once (the draft's list form).
 * - `RateLimit`: the most constrained one: the fewest hits left, then the latest reset (`t`); a
 *   policy with nothing left and the longest wait comes first, as in `responseReport`. Ours
 *   counts `oursHitsLeft` (a budget's points over the operation's estimate); another's counts
 *   its `r`, as nothing says what a hit took there.
 * - `Retry-After`: the longest wait in seconds, which satisfies every limit.
 *
 * Answers nothing when neither side has any of these headers.
 */
export function mergeRateLimitHeaders(
  existing: ReadableHeaders,
  ours: readonly (readonly [name: string, value: string])[],
  oursHitsLeft?: number,
): [name: string, value: string][] {
  // the common case, a response with none of them yet: ours as they are (a report names each
  // header once), without parsing anything; this runs for every limited response
  if (
    !existing.get('ratelimit-policy') &&
    !existing.get('ratelimit') &&
    !existing.get('retry-after')
  ) {
    if (namedOnce(ours)) return ours.map(([name, value]) => [name, value]);
  }
  const theirs = (name: string): string[] => listItems(existing.get(name) ?? '');
  const own = (name: string): string[] =>
    ours.filter(([n]) => n === name).flatMap(([, value]) => listItems(value));
  const values = (name: string): string[] => [...theirs(name), ...own(name)];
  const merged: [string, string][] = [];
  const policies = [...new Set(values('ratelimit-policy'))];
  if (policies.length) merged.push(['ratelimit-policy', policies.join(', ')]);
  const states = [
    ...theirs('ratelimit').map((item) => state(item)),
    ...own('ratelimit').map((item) => state(item, oursHitsLeft)),
  ];
  if (states.length) merged.push(['ratelimit', mostConstrained(states)]);
  const waits = values('retry-after').filter((v) => /^\d+$/.test(v));
  if (waits.length) merged.push(['retry-after', String(Math.max(...waits.map(Number)))]);
  return merged;
}

/** Whether no header name comes twice among `headers` (a handful). */
function namedOnce(headers: readonly (readonly [name: string, value: string])[]): boolean {
  for (let i = 1; i < headers.length; i++) {
    for (let j = 0; j < i; j++) if (headers[i]?.[0] === headers[j]?.[0]) return false;
  }
  return true;
}

/** The items of a structured-field list: commas inside a quoted policy name do not split. */
function listItems(value: string): string[] {
  const items: string[] = [];
  let item = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const char = value[i];
    if (quoted && char === '\\') {
      item += char + (value[++i] ?? '');
      continue;
    }
    if (char === '"') quoted = !quoted;
    if (char === ',' && !quoted) {
      items.push(item);
      item = '';
    } else {
      item += char;
    }
  }
  items.push(item);
  return items.map((i) => i.trim()).filter((i) => i.length > 0);
}

interface State {
  readonly item: string;
  readonly hitsLeft: number;
  readonly reset: number;
}

/** A `"name";r=2;t=30` item, with the hits it leaves (its `r` unless told). */
function state(item: string, hitsLeft?: number): State {
  const r = parameter(item, 'r') ?? Infinity;
  return { item, hitsLeft: r === 0 ? 0 : (hitsLeft ?? r), reset: parameter(item, 't') ?? 0 };
}

/** The item with the fewest hits left, then the longest wait. */
function mostConstrained(states: readonly State[]): string {
  const better = (a: State, b: State) =>
    b.hitsLeft < a.hitsLeft || (b.hitsLeft === a.hitsLeft && b.reset > a.reset) ? b : a;
  return states.reduce(better).item;
}

/** An integer parameter of a list item (after its quoted name), or undefined. */
function parameter(item: string, name: string): number | undefined {
  const params = item.slice(item.lastIndexOf('"') + 1);
  const match = new RegExp(`;\\s*${name}=(\\d+)`).exec(params);
  return match ? Number(match[1]) : undefined;
}
