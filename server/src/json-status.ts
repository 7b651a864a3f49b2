import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type { GraphQLError } from 'graphql';

/**
 * The codes Apollo Server gives request errors of a well-formed request: the document does not
 * parse, does not validate (graphql-armor's bounds included), or its variables do not coerce.
 * Malformed requests (`BAD_REQUEST`: no query, a mutation over GET, CSRF) are not among them.
 */
const REQUEST_ERROR_CODES: ReadonlySet<unknown> = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
]);

/** Media ranges under which a client also takes `application/graphql-response+json`. */
const GRAPHQL_RESPONSE_RANGES: ReadonlySet<string> = new Set([
  'application/graphql-response+json',
  'application/*',
  '*/*',
]);

/**
 * GraphQL over HTTP asks for status 200 on request errors when the response is
 * `application/json`: a client that accepts only that type predates
 * `application/graphql-response+json` and reads the errors from the body, while an
 * intermediary that sees a 4xx on it may replace the body with its own. Apollo Server answers
 * 400 whatever the client accepts (and its `status400ForVariableCoercionErrors: false` is
 * deprecated, and would give 200 to every client). This plugin turns those 400s into 200 for
 * such clients only; a client that also accepts `application/graphql-response+json` (by name or
 * by a wildcard, as `fetch`'s default does) or sends no `Accept` keeps Apollo's 400.
 */
export function jsonClientStatus<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ request, response, errors }) {
          if (
            response.http.status === 400 &&
            isRequestError(errors) &&
            acceptsOnlyJson(request.http?.headers.get('accept'))
          ) {
            response.http.status = 200;
          }
        },
      };
    },
  };
}

function isRequestError(errors: readonly GraphQLError[] | undefined): boolean {
  return (
    errors !== undefined &&
    errors.length > 0 &&
    errors.every((e) => REQUEST_ERROR_CODES.has(e.extensions.code))
  );
}

/** Whether `accept` names `application/json` and admits no type of GraphQL's own. */
function acceptsOnlyJson(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const accepted = accept
    .split(',')
    .map((range) => range.split(';').map((part) => part.trim().toLowerCase()))
    .filter(([, ...params]) => !params.some((p) => /^q=0(\.0*)?$/.test(p)))
    .map(([type]) => type ?? '');
  return (
    accepted.includes('application/json') &&
    !accepted.some((type) => GRAPHQL_RESPONSE_RANGES.has(type))
  );
}
