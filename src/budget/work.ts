/** The parts of an operation's result the budget reads once it ran. */
export interface RanResult {
  /** Undefined when the operation never executed (its variables did not coerce, say). */
  readonly data?: unknown;
  readonly errors?:
    readonly { readonly path?: readonly (string | number)[] | undefined }[] | undefined;
}

/**
 * Whether errors nulled more of `result` than the fields that failed: `data` itself, or a
 * parent of an error's field (a non-null field that failed nulls its nearest nullable parent,
 * up to `data`). The resolvers under such a parent ran, and their work is no longer in the
 * response: pricing the response would refund work that was done. A field that failed on its own
 * (its parent still there) ran nothing below it, so what its result lacks was not done.
 */
export function errorsNulledWork(result: RanResult): boolean {
  const { data, errors } = result;
  if (data === null) return true;
  if (data === undefined || !errors) return false;
  return errors.some(({ path }) => path !== undefined && parentNulled(data, path));
}

/** Whether some parent of the field at `path` (its last step) is missing from `data`. */
function parentNulled(data: unknown, path: readonly (string | number)[]): boolean {
  let at = data;
  for (let i = 0; i < path.length - 1; i++) {
    if (typeof at !== 'object' || at === null) return true;
    at = (at as Record<string | number, unknown>)[path[i] as string | number];
  }
  return typeof at !== 'object' || at === null;
}
