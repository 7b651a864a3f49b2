import type { FastifyInstance, FastifyReply } from 'fastify';
import { GraphQLError, isObjectType, type GraphQLSchema } from 'graphql';
import type {} from 'mercurius';

import type { RateLimitDirective } from '../directive';
import type { ExecuteHooks, ExecutionResultShape } from '../plugins/envelop';
import { RateLimitConfigError } from '../errors';
import { LIMITED } from '../schema/transform-mark';

/** The options of {@link mercuriusRateLimit}. */
export interface MercuriusRateLimitOptions {
  /** What `rateLimitDirective()` returned; its `typeDefs` go into Mercurius' `schema`. */
  readonly directive: RateLimitDirective;
}

/**
 * The Fastify plugin for Mercurius; register it after `mercurius`. At start it passes
 * Mercurius' schema through the directive's `transformer` (or, when that was done already,
 * refuses a schema the transform missed in part); it refuses, when the app is ready and on
 * every operation, a wrapped field whose resolver was replaced since (`defineResolvers` or
 * `defineLoaders` called after this plugin). On every operation it runs the budget
 * before execution with the operation's name, refunds what was not used after it, and
 * writes the `RateLimit` headers and, with `status429`, the 429 through Fastify's reply. With
 * `jit` on or off: graphql-jit runs the same wrapped resolvers.
 */
export async function mercuriusRateLimit(
  app: FastifyInstance,
  options: MercuriusRateLimitOptions,
): Promise<void> {
  const directive = options?.directive;
  if (typeof directive?.transformer !== 'function') {
    throw new RateLimitConfigError(
      'mercuriusRateLimit: `directive` must be what rateLimitDirective() returned',
    );
  }
  const graphql = app.graphql;
  if (typeof graphql?.addHook !== 'function') {
    throw new RateLimitConfigError(
      'mercuriusRateLimit: register mercurius before this plugin: there is no app.graphql yet',
    );
  }
  const { envelopPlugin: envelop } = directive;
  const { schema } = graphql;
  if (!wrapsAnyField(schema)) graphql.transformSchema(directive.transformer);
  // applied or not, what is served now must be wholly transformed: a part missed fails here
  envelop.onSchemaChange({ schema: graphql.schema });
  // and once more when the app is ready: `defineResolvers` or `defineLoaders` called after this
  // plugin replace wrapped resolvers in place (each operation checks it too)
  app.addHook('onReady', async () => envelop.onSchemaChange({ schema: graphql.schema }));

  // Mercurius' hooks are not told the operation's name: note it where every call passes
  const names = new WeakMap<object, string | undefined>();
  const execute = graphql;
  app.graphql = new Proxy(execute, {
    apply(target, self, args: Parameters<typeof execute>) {
      const [source, given, variables, operationName] = args;
      const context = given ?? {};
      names.set(context, operationName ?? undefined);
      return Reflect.apply(target, self, [source, context, variables, operationName]);
    },
  });

  const running = new WeakMap<object, ExecuteHooks>();
  // Mercurius answers an error thrown from a hook without `extensions`: a refused operation's
  // `extensions.cost` waits here, by reply and operation (in a batch, its `operationId`)
  const refused = new WeakMap<object, Map<number, Record<string, unknown>>>();
  // the envelop plugin's own bookkeeping of a response, keyed by Fastify's reply
  const note = (context: object, result: ExecutionResultShape): void => {
    const { reply } = context as { reply?: FastifyReply };
    if (reply) envelop.onExecutionResult({ request: reply, context, result });
  };

  if (envelop.onParse) {
    // before Mercurius parses: graphql-js parses by recursion, and a document nested deep
    // enough ends its stack (answered "Maximum call stack size exceeded")
    graphql.addHook('preParsing', async (_schema, source) => {
      try {
        envelop.onParse?.({ params: { source } });
      } catch (error) {
        throw error instanceof GraphQLError ? asClientError(error) : error;
      }
    });
  }

  graphql.addHook('preExecution', async (served, document, context, variables) => {
    // a schema replaced later is checked once, like the first
    envelop.onSchemaChange({ schema: served });
    let refusals: readonly GraphQLError[] | undefined;
    const hooks = await envelop.onExecute({
      args: {
        schema: served,
        document,
        contextValue: context,
        variableValues: variables as Record<string, unknown> | undefined,
        operationName: names.get(context),
      },
      setResultAndStopExecution: ({ errors }) => (refusals = errors),
    });
    const refusal = refusals?.[0];
    // GraphQL's own errors (variables that do not coerce, which the compiled path of `jit` does
    // not check): answered as Mercurius answers them when it checks variables itself
    if (refusals && refusal && refusal.extensions.code === undefined) {
      const errors = refusals.map((e) => {
        // the status is Yoga's (see the envelop plugin): Mercurius takes it from `statusCode`
        const extensions = { ...e.extensions };
        delete extensions.http;
        const { nodes, source, positions, originalError } = e;
        return new GraphQLError(e.message, { nodes, source, positions, originalError, extensions });
      });
      throw Object.assign(new Error('Graphql validation error'), {
        code: 'MER_ERR_GQL_VALIDATION',
        statusCode: 400,
        errors,
      });
    }
    if (refusal) {
      // with a status (503: the store could not decide), told to Mercurius as it reads one
      const thrown = refusal.extensions.http ? asClientError(refusal) : refusal;
      const result: RefusedResult = { data: null, errors: [thrown] };
      await hooks.onExecuteDone({
        result,
        setResult: (extended) => void (result.extensions = extended.extensions),
      });
      note(context, result);
      const { reply, operationId = 0 } = context as { reply?: FastifyReply; operationId?: number };
      if (reply && result.extensions) {
        const extensions = refused.get(reply) ?? new Map<number, Record<string, unknown>>();
        refused.set(reply, extensions.set(operationId, result.extensions));
      }
      throw thrown;
    }
    running.set(context, hooks);
  });

  graphql.addHook('onResolution', async (execution, context) => {
    const result = execution as ExecutionResultShape & { extensions?: Record<string, unknown> };
    await running.get(context)?.onExecuteDone({
      result,
      setResult: (extended) => {
        result.extensions = extended.extensions;
      },
    });
    running.delete(context);
    note(context, result);
  });

  app.addHook('onSend', async (_request, reply, given) => {
    const extensions = refused.get(reply);
    refused.delete(reply);
    const payload = extensions ? withExtensions(given, extensions) : given;
    const headers: ReplyResponse['headers'] = {
      get: (name) => {
        const value = reply.getHeader(name);
        return value === undefined ? null : [value].flat().join(', ');
      },
      set: (name, value) => void reply.header(name, value),
    };
    envelop.onResponse<ReplyResponse>({
      request: reply,
      response: { headers, body: payload, status: undefined },
      setResponse: ({ status }) => {
        if (status !== undefined) void reply.code(status);
      },
      fetchAPI: { Response: ReplyResponse },
    });
    return payload;
  });
}

/** A refused operation's result, to which the budget adds `extensions.cost`. */
interface RefusedResult extends ExecutionResultShape {
  extensions?: Record<string, unknown> | undefined;
}

/**
 * An error with the HTTP status it carries for Apollo Server and Yoga (`extensions.http`; 400
 * when it has none, for a document refused before it was parsed): Mercurius answers an error
 * with the `statusCode` of its `originalError` instead, and would show `extensions.http`.
 */
function asClientError(error: GraphQLError): GraphQLError {
  const { http, ...extensions } = error.extensions as { http?: { status?: number } };
  const statusCode = http?.status ?? 400;
  const cause = error.originalError;
  const originalError = Object.assign(new Error(error.message, cause && { cause }), { statusCode });
  return new GraphQLError(error.message, { extensions, originalError });
}

/**
 * The JSON body Mercurius made of refused operations' errors, with their `extensions` added:
 * one response, or a batch's (each by its `operationId`).
 */
function withExtensions(
  payload: unknown,
  extensions: ReadonlyMap<number, Record<string, unknown>>,
): unknown {
  if (typeof payload !== 'string') return payload;
  const body = JSON.parse(payload) as unknown;
  const add = (response: unknown, operationId: number): unknown => {
    const added = extensions.get(operationId);
    return added && typeof response === 'object' && response !== null
      ? { ...response, extensions: added }
      : response;
  };
  return JSON.stringify(Array.isArray(body) ? body.map(add) : add(body, 0));
}

/** The response the envelop plugin writes its headers and 429 to, told to Fastify's reply. */
class ReplyResponse {
  readonly status: number | undefined;
  readonly headers: { get(name: string): string | null; set(name: string, value: string): void };
  constructor(
    readonly body: unknown,
    init?: { status: number; headers: ReplyResponse['headers'] },
  ) {
    this.status = init?.status;
    this.headers = init?.headers ?? { get: () => null, set: () => undefined };
  }
}

/** Whether any field of `schema` went through a `transformer` already. */
function wrapsAnyField(schema: GraphQLSchema): boolean {
  return Object.values(schema.getTypeMap()).some(
    (type) =>
      isObjectType(type) && Object.values(type.getFields()).some((f) => f.extensions[LIMITED]),
  );
}

// what fastify-plugin would set: the hooks and app.graphql apply where mercurius was registered
Object.assign(mercuriusRateLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'graphql-atomic-rate-limit',
  [Symbol.for('plugin-meta')]: { name: 'graphql-atomic-rate-limit', fastify: '5.x' },
});
