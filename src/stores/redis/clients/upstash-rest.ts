import { asStrings, type Command, type Endpoint, type StoreConnection } from './adapter';

/*
 * Upstash's REST API as a client family: each command the store sends is one HTTPS call,
 * `POST {url}/` with the command as a JSON array and `Authorization: Bearer <token>`, answered
 * `{"result": ...}` or `{"error": "..."}` (as Upstash documents it). The store above this seam
 * sends one command per batch of hits (an EVALSHA of the hit script), so a batch is one HTTP call.
 *
 * There is no connection to open: the endpoint is ready until it is closed. Redis Functions are
 * not used over REST: FUNCTION and FCALL are refused here, unsent, so the store's set-up loads
 * the scripts (SCRIPT LOAD) and its calls are EVALSHA, EVAL only after a NOSCRIPT reply.
 *
 * A call is never sent again. One whose answer was lost (a network error, the `timeoutMs`
 * deadline, after which its fetch is aborted, a 5xx or any answer with no JSON result) may
 * have run on the server: it fails, its outcome unknown, and the directive's `onStoreError`
 * answers its hits; a retry could count them twice. A redirect is never followed (a 3xx may come
 * after the script ran, and following it would run it again, or take another origin's answer as
 * the decision): it is such a failure too. Error messages name the HTTP status and Upstash's error
 * text with every argument of the command (keys, hence identities) taken out, and the token (and
 * so `Bearer <token>`) taken out of every message, even of a text that echoes the request's
 * `Authorization` header.
 */

/** What the REST adapter is given by `createUpstashStore`. */
export interface UpstashRestOptions {
  /** The database's REST URL, `https://<name>.upstash.io`. */
  readonly url: string;
  /** Its REST token. */
  readonly token: string;
  /** The `fetch` to call it with. */
  readonly fetch: typeof globalThis.fetch;
  /** Each call is aborted after this long, its outcome unknown. */
  readonly timeoutMs: number;
}

/** Commands the REST adapter does not send: the store then runs its scripts with EVALSHA. */
const REFUSED = new Set(['FUNCTION', 'FCALL', 'FCALL_RO']);

/** At most this much of Upstash's error text is kept in a message. */
const MAX_TEXT = 200;

/**
 * `text` with each of the command's arguments (but its name) and the token taken out, and cut
 * short.
 */
function scrub(text: string, command: readonly string[], token: string): string {
  let out = withoutToken(text, token);
  // the longest first, so that a key is not half taken out by an argument it contains
  const args = command
    .slice(1)
    .filter((arg) => arg.length >= 3)
    .sort((a, b) => b.length - a.length);
  for (const arg of args) out = out.split(arg).join('[…]');
  return out.length > MAX_TEXT ? `${out.slice(0, MAX_TEXT)}…` : out;
}

/** `text` with every occurrence of `token` (hence of `Bearer <token>`) taken out. */
function withoutToken(text: string, token: string): string {
  return text.split(token).join('[token]');
}

/** The reply of one command, as Upstash answers it. */
interface Answer {
  readonly result?: unknown;
  readonly error?: unknown;
}

const UNKNOWN = 'its outcome is unknown and it is not sent again';

/** The store's connection over Upstash's REST API. */
export function upstashRestConnection(options: UpstashRestOptions): StoreConnection {
  const { token, fetch, timeoutMs } = options;
  const base = options.url.replace(/\/+$/, '');
  const address = new URL(base).host;
  const inFlight = new Set<AbortController>();
  let closed = false;

  // every message that leaves the adapter, whatever built it: no token in it, nor in its stack
  const send = (command: Command): Promise<unknown> =>
    call(command).catch((error: unknown) => {
      const text = error instanceof Error ? error.message : String(error);
      throw new Error(withoutToken(text, token));
    });

  const call = async (command: Command): Promise<unknown> => {
    if (closed) throw new Error('The rate limit store is closed');
    const args = asStrings(command);
    const name = (args[0] ?? '').toUpperCase();
    if (REFUSED.has(name)) {
      throw new Error(`ERR ${name} is not used over the Upstash REST API`);
    }
    const abort = new AbortController();
    inFlight.add(abort);
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    let status: number;
    let body: string;
    try {
      const response = await fetch(`${base}/`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(args),
        signal: abort.signal,
        redirect: 'manual',
      });
      status = response.status;
      // a browser's fetch answers a redirect it did not follow as status 0, type opaqueredirect
      if (response.type === 'opaqueredirect') status = 300;
      body = await response.text();
    } catch (error) {
      if (abort.signal.aborted) {
        throw new Error(
          closed
            ? `Upstash ${name} call cut short: the store was closed; ${UNKNOWN}`
            : `Upstash did not answer ${name} within timeoutMs (${timeoutMs} ms); ${UNKNOWN}`,
        );
      }
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(`Upstash ${name} call failed (${scrub(why, args, token)}); ${UNKNOWN}`);
    } finally {
      clearTimeout(timer);
      inFlight.delete(abort);
    }
    if (status >= 300 && status < 400) {
      throw new Error(
        `Upstash answered ${name} with a redirect (HTTP ${status}), which is not followed; ${UNKNOWN}`,
      );
    }
    if (status === 401 || status === 403) {
      throw new Error(`Upstash refused the token (HTTP ${status}); ${name} was not run`);
    }
    let answer: Answer | undefined;
    try {
      const parsed: unknown = JSON.parse(body);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        answer = parsed;
      }
    } catch {
      answer = undefined;
    }
    if (answer && typeof answer.error === 'string') {
      // Redis' own error text first (NOSCRIPT, WRONGTYPE, ...): the store reads it
      throw new Error(scrub(answer.error, args, token));
    }
    if (answer && 'result' in answer && status >= 200 && status < 300) return answer.result;
    throw new Error(`Upstash answered ${name} with HTTP ${status} and no result; ${UNKNOWN}`);
  };

  const ready = (): boolean => !closed;
  const onceReady = (listener: () => void): (() => void) => {
    let cancelled = false;
    if (!closed) {
      queueMicrotask(() => {
        if (!cancelled && !closed) listener();
      });
    }
    return () => {
      cancelled = true;
    };
  };
  const self: Endpoint = {
    address,
    isReady: ready,
    open: () => undefined,
    onceReady,
    send,
  };
  return {
    family: 'upstash',
    isCluster: false,
    isReady: ready,
    status: () => (closed ? 'closed' : 'ready'),
    open: () => undefined,
    onceReady,
    send: (command) => send(command),
    masterOf: () => undefined,
    master: () => undefined,
    masters: () => [self],
    source: () => (closed ? 'closed' : 'open'),
    close: async () => {
      closed = true;
      for (const abort of inFlight) abort.abort();
    },
  };
}
