import type { GraphQLResolveInfo } from 'graphql';

import { identityFrom } from './identity';
import type { IdentityWatch } from './identity-watch';
import type { Config, IdentitySource } from '../options/directive-options';
import { ARGUMENT_SOURCE, type FieldRule } from '../schema/field-rules';

/** Who each rule of a hit counts against: one identity for all, or one per rule. */
export type Who<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
) => string | readonly string[] | Promise<string | readonly string[]>;

/**
 * Who each of `rules` counts against, computed once per source per hit: one string when every
 * rule has the same source (the common case: no array, one call), else one identity per rule.
 */
export function identitiesOf<TContext>(
  rules: readonly FieldRule[],
  config: Config<TContext>,
  watch?: IdentityWatch,
): Who<TContext> {
  const sources = [...new Set(rules.map((r) => r.by))];
  const sourceOf = rules.map((r) => sources.indexOf(r.by));
  const read = sources.map((by): SourceReader<TContext> => {
    const reader = sourceReader(by, config);
    return watch
      ? (context, info, args) => watch.watched(by, () => reader(context, info, args))
      : reader;
  });
  // the common case, one source that answers at once, costs no promise
  if (read.length === 1) return read[0] as SourceReader<TContext>;
  return async (context, info, args) => {
    const found: string[] = [];
    for (const r of read) found.push(await r(context, info, args));
    return sourceOf.map((j) => found[j] as string);
  };
}

/** Who one source says a hit counts against. */
export type SourceReader<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
) => string | Promise<string>;

/**
 * The reader of one source: `identify` (`by` undefined), an argument (`args.<name>`) or a name of
 * `identities`. Fields read through it, and so does the budget (with no field: `info` undefined
 * and `args` empty), so an identity is checked the same way wherever it counts.
 */
export function sourceReader<TContext>(
  by: string | undefined,
  config: Config<TContext>,
): SourceReader<TContext> {
  if (by === undefined) {
    const { identify } = config;
    return (context, info) => identityFrom(() => identify(context, info), 'identify');
  }
  if (by.startsWith(ARGUMENT_SOURCE)) {
    const name = by.slice(ARGUMENT_SOURCE.length);
    return (_context, _info, args) =>
      identityFrom(() => args[name], `argument ${name} (by: "${by}")`);
  }
  const source = config.identities.get(by) as IdentitySource<TContext>;
  const what = `identities.${by} (by: "${by}")`;
  return (context, info, args) => identityFrom(() => source(context, info, args), what);
}
