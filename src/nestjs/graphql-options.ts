import { buildASTSchema, parse, type GraphQLDirective, type GraphQLSchema } from 'graphql';

import { COST_DIRECTIVE, LIST_SIZE_DIRECTIVE } from '../cost/directives';

/**
 * The parts of `GraphQLModule`'s options (Apollo driver) the module fills in, spelled out so
 * that the published types need neither @nestjs/graphql's option types nor @nestjs/apollo.
 */
export interface GraphQLModuleOptionsShape {
  /** Code-first: where Nest writes the generated schema (`true`: in memory). */
  readonly autoSchemaFile?: unknown;
  readonly typeDefs?: string | string[] | undefined;
  readonly transformSchema?:
    ((schema: GraphQLSchema) => GraphQLSchema | Promise<GraphQLSchema>) | undefined;
  readonly plugins?: readonly unknown[] | undefined;
  readonly buildSchemaOptions?: { readonly directives?: readonly GraphQLDirective[] } | undefined;
  /** Which of Nest's enhancers run on field resolvers (`@ResolveField`); none by default. */
  readonly fieldResolverEnhancers?: readonly ('guards' | 'interceptors' | 'filters')[] | undefined;
}

/** What `GraphQLModule` needs of one directive, ready to merge into its options. */
export interface GraphQLParts {
  readonly typeDefs: string;
  readonly directives: readonly GraphQLDirective[];
  readonly transform: (schema: GraphQLSchema, fieldInterceptors: boolean) => GraphQLSchema;
  readonly plugin: unknown;
}

/**
 * The directives `typeDefs` declares, as the `GraphQLDirective` objects Nest's code-first
 * schema builder takes: `@<name>` (its enum comes along as an argument type), and `@cost` and
 * `@listSize` when a budget prices operations.
 */
export function directiveObjects(
  typeDefs: string,
  name: string,
  budgeted: boolean,
): GraphQLDirective[] {
  const declared = buildASTSchema(parse(typeDefs));
  const names = budgeted ? [name, COST_DIRECTIVE, LIST_SIZE_DIRECTIVE] : [name];
  return names.map((n) => declared.getDirective(n) as GraphQLDirective);
}

/**
 * `options` with the limiter wired in, leaving `options` as it was: the transform runs after the
 * application's own, the plugin joins its plugins, and the directives join code-first's
 * `buildSchemaOptions.directives` (with `autoSchemaFile`) or schema-first's `typeDefs`.
 */
export function withRateLimit<T extends GraphQLModuleOptionsShape>(
  options: T,
  parts: GraphQLParts,
): T {
  const own = options.transformSchema;
  const fieldInterceptors = options.fieldResolverEnhancers?.includes('interceptors') ?? false;
  const transformSchema = async (schema: GraphQLSchema): Promise<GraphQLSchema> =>
    parts.transform(own ? await own(schema) : schema, fieldInterceptors);
  const plugins = [...(options.plugins ?? []), parts.plugin];
  if (options.autoSchemaFile !== undefined && options.autoSchemaFile !== false) {
    const built = options.buildSchemaOptions;
    const directives = [...(built?.directives ?? []), ...parts.directives];
    return { ...options, transformSchema, plugins, buildSchemaOptions: { ...built, directives } };
  }
  const given = options.typeDefs;
  const typeDefs = [...(given === undefined ? [] : [given].flat()), parts.typeDefs];
  return { ...options, transformSchema, plugins, typeDefs };
}
