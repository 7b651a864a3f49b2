import { createClient, type Client } from 'graphql-ws';
import type { GraphQLError } from 'graphql';
import WebSocket from 'ws';

/**
 * What a subscription's start came to, as its client saw it: `'started'` once its first event
 * arrived with data, else the `extensions.code` of the first error it was answered with.
 */
export type StartOutcome = unknown;

/** A graphql-ws client on its own socket, connected (its `connection_init` acknowledged). */
export async function wsClient(
  url: string,
  connectionParams: Record<string, unknown>,
): Promise<{ start(query: string): Promise<StartOutcome>; close(): Promise<void> }> {
  let connected!: () => void;
  let failed!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    connected = resolve;
    failed = reject;
  });
  const client: Client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams,
    lazy: false,
    retryAttempts: 0,
    on: { connected: () => connected(), error: (e) => failed(e) },
  });
  await ready;
  return {
    start: (query) => firstOutcome(client, query),
    close: async () => {
      await client.dispose();
    },
  };
}

function firstOutcome(client: Client, query: string): Promise<StartOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: StartOutcome): void => {
      if (settled) return;
      settled = true;
      stop();
      resolve(outcome);
    };
    const codeOf = (errors: unknown): unknown =>
      [errors]
        .flat()
        .map((e) => (e as { extensions?: { code?: unknown } } | undefined)?.extensions?.code)[0] ??
      errors;
    const stop = client.subscribe(
      { query },
      {
        next: (result) => settle(result.errors?.length ? codeOf(result.errors) : 'started'),
        error: (error) => settle(codeOf(error)),
        complete: () => settle('completed without an event'),
      },
    );
  });
}

/**
 * A Yoga subscription over GraphQL over SSE (Yoga's built-in transport), as `identity` in the
 * `x-identity` header: what its start came to, as {@link wsClient}'s `start` says it.
 */
export async function sseStart(
  url: string,
  query: string,
  identity: string,
): Promise<StartOutcome> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'x-identity': identity,
    },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(10_000),
  });
  const reader = response.body?.getReader();
  if (!reader) throw new Error('sseStart: no body');
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return 'completed without an event';
      text += decoder.decode(value, { stream: true });
      const data = /event: next\r?\ndata: (.*)\r?\n/.exec(text)?.[1];
      if (data !== undefined) {
        const result = JSON.parse(data) as {
          errors?: { extensions?: { code?: unknown } }[];
        };
        return result.errors?.length ? result.errors[0]?.extensions?.code : 'started';
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** A subscription left open: what its start came to, and how its client ends it. */
export interface Held {
  readonly outcome: StartOutcome;
  /** Ends the subscription from the client: `complete` over graphql-ws, the request aborted over SSE. */
  close(): void;
}

/**
 * A graphql-ws client on its own socket that keeps its subscription open: `hold` answers once
 * its start came to something (as {@link wsClient}'s `start` says it); `close` disposes the
 * client, closing its socket without completing the subscription.
 */
export async function wsHolder(
  url: string,
  connectionParams: Record<string, unknown>,
): Promise<{ hold(query: string): Promise<Held>; close(): Promise<void> }> {
  let connected!: () => void;
  let failed!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    connected = resolve;
    failed = reject;
  });
  const client: Client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams,
    lazy: false,
    retryAttempts: 0,
    on: { connected: () => connected(), error: (e) => failed(e) },
  });
  await ready;
  return {
    hold: (query) =>
      new Promise((resolve) => {
        let settled = false;
        const settle = (outcome: StartOutcome): void => {
          if (settled) return;
          settled = true;
          resolve({ outcome, close: stop });
        };
        const stop = client.subscribe(
          { query },
          {
            next: (result) =>
              settle(result.errors?.length ? result.errors[0]?.extensions?.code : 'started'),
            error: (error) =>
              settle([error].flat().map((e) => (e as GraphQLError).extensions?.code)[0]),
            complete: () => settle('completed without an event'),
          },
        );
      }),
    close: async () => {
      await client.dispose();
    },
  };
}

/** A Yoga subscription over SSE, as `identity`, left open until `close` aborts its request. */
export async function sseHold(url: string, query: string, identity: string): Promise<Held> {
  const aborting = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'x-identity': identity,
    },
    body: JSON.stringify({ query }),
    signal: aborting.signal,
  });
  const reader = response.body?.getReader();
  if (!reader) throw new Error('sseHold: no body');
  const close = (): void => aborting.abort();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { outcome: 'completed without an event', close };
    text += decoder.decode(value, { stream: true });
    const data = /event: next\r?\ndata: (.*)\r?\n/.exec(text)?.[1];
    if (data !== undefined) {
      const result = JSON.parse(data) as { errors?: { extensions?: { code?: unknown } }[] };
      if (result.errors?.length) {
        close();
        return { outcome: result.errors[0]?.extensions?.code, close };
      }
      return { outcome: 'started', close };
    }
  }
}
