import { Agent, fetch, type Headers } from 'undici';

/** One GraphQL response, as a client sees it. */
export interface GraphQLResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: {
    data?: Record<string, unknown> | null;
    errors?: { message: string; extensions?: Record<string, unknown> }[];
    extensions?: Record<string, unknown>;
  };
}

/** A client with its own connection pool, so several clients really are several connections. */
export function httpClient(): { post: typeof postGraphQL; close(): Promise<void> } {
  const dispatcher = new Agent({ connections: 4 });
  return {
    post: (url, query, token, variables) => postGraphQL(url, query, token, variables, dispatcher),
    close: () => dispatcher.close(),
  };
}

/** POSTs `query` to `url`, with `Authorization: Bearer <token>` when a token is given. */
export async function postGraphQL(
  url: string,
  query: string,
  token?: string,
  variables?: Record<string, unknown>,
  dispatcher?: Agent,
): Promise<GraphQLResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(10_000),
    ...(dispatcher ? { dispatcher } : {}),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as GraphQLResponse['body'],
  };
}

export const SUBMIT =
  'mutation ($c: ID!, $f: String!) { submitFlag(challengeId: $c, flag: $f) { correct } }';
export const SUBMISSIONS = '{ me { submissions } }';

/** The codes of a response's errors. */
export const errorCodes = (r: GraphQLResponse): unknown[] =>
  (r.body.errors ?? []).map((e) => e.extensions?.code);
