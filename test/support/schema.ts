import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql, type ExecutionResult, type GraphQLSchema } from 'graphql';

import { rateLimitDirective, type RateLimitDirectiveOptions } from '../../src';

/** A test schema: `sdl` merged with the directive's typeDefs and passed through its transformer. */
export function limitedSchema(
  sdl: string,
  resolvers: Record<string, unknown>,
  options: RateLimitDirectiveOptions,
): GraphQLSchema {
  const { typeDefs, transformer } = rateLimitDirective(options);
  return transformer(
    makeExecutableSchema({ typeDefs: [typeDefs, sdl], resolvers: resolvers as never }),
  );
}

/** Runs `source` against `schema` with `context`, as a server would for one request. */
export function run(
  schema: GraphQLSchema,
  source: string,
  context: unknown = {},
): Promise<ExecutionResult> {
  return graphql({ schema, source, contextValue: context });
}

/** The `extensions.code` of each error of `result`, in order. */
export function codes(result: ExecutionResult): unknown[] {
  return (result.errors ?? []).map((e) => e.extensions?.code);
}
