import type { GraphQLFieldResolver } from 'graphql';

/**
 * A Subscription field's `subscribe`, limited: `decided` is the field's own `subscribe` (or
 * graphql-js' default, which reads the root value) behind the field's decision, so each start
 * of the subscription is one hit for its identity, and a refused start throws before any source
 * stream is made (graphql-js answers it as the subscription's result). Events are not counted:
 * `resolve`, which runs per event, is left as it was.
 *
 * The source stream `decided` returns passes through here unchanged: this is where a hook that
 * runs when the subscription ends (a live-subscription slot given back) wraps it.
 */
export function limitedStart<TContext>(
  decided: GraphQLFieldResolver<unknown, TContext>,
): GraphQLFieldResolver<unknown, TContext> {
  return (source, args, context, info) => decided(source, args, context, info);
}
