import { UnauthenticatedError } from '../errors';
import { warn as emit, WARNING_CODES } from '../warnings';

/**
 * Limited hits after which a source that never gave an identity is warned about: an app whose
 * context holds `user` while `identify` reads the default `context.team?.id` answers every
 * logged-in user UNAUTHENTICATED, and nothing else would say why.
 */
export const MISSING_IDENTITY_HITS = 100;

/** Watches what identity sources give, for one directive. */
export interface IdentityWatch {
  /** `read`, watched as the source `by` (undefined: `identify`) while it has never given one. */
  watched<T>(by: string | undefined, read: () => T | Promise<T>): T | Promise<T>;
}

/**
 * A watch that warns once per source, through `warn`, when the first
 * {@link MISSING_IDENTITY_HITS} hits it decided in this process all found no identity. Once a
 * source has given one identity, or was warned about, it is no longer watched.
 */
export function createIdentityWatch(
  warn: (message: string) => void = (message) => emit(message, WARNING_CODES.MISSING_IDENTITY),
): IdentityWatch {
  const missing = new Map<string | undefined, number>();
  const done = new Set<string | undefined>();
  const found = (by: string | undefined): void => {
    done.add(by);
  };
  const failed = (by: string | undefined, error: unknown): void => {
    if (!(error instanceof UnauthenticatedError) || done.has(by)) return;
    const count = (missing.get(by) ?? 0) + 1;
    missing.set(by, count);
    if (count < MISSING_IDENTITY_HITS) return;
    done.add(by);
    warn(
      by === undefined
        ? `rateLimitDirective: identify gave no identity for the first ${count} limited hits of ` +
            'this process, each answered UNAUTHENTICATED. The default identify reads ' +
            'context.team?.id; pass identify for your context, e.g. (context) => context.user?.id'
        : `rateLimitDirective: the identity source "${by}" gave no identity for the first ` +
            `${count} limited hits of this process, each answered UNAUTHENTICATED`,
    );
  };
  return {
    watched(by, read) {
      if (done.has(by)) return read();
      let value: ReturnType<typeof read>;
      try {
        value = read();
      } catch (error) {
        failed(by, error);
        throw error;
      }
      if (!(value instanceof Promise)) {
        found(by);
        return value;
      }
      return value.then(
        (identity) => {
          found(by);
          return identity;
        },
        (error: unknown) => {
          failed(by, error);
          throw error;
        },
      );
    },
  };
}
