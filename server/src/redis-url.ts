/*
 * `REDIS_URL`, checked before anything connects: a URL that cannot work stops the server with
 * one line naming what was wrong, instead of a later `connect ENOENT` or a database that is
 * silently not the one asked for.
 */

/** The largest database index Redis accepts in its `databases` setting. */
const MAX_DATABASE = 2_147_483_647;

/**
 * Returns `value` when it is a `redis://` or `rediss://` URL whose path is empty or a whole
 * database index; throws "must be ..." otherwise. Whether the server has that database is
 * known only once connected, when a SELECT it refuses stops the server.
 */
export function checkRedisUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`must be a URL like redis://host:6379/0, got ${JSON.stringify(redact(value))}`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new Error(
      `must start with redis:// (or rediss:// for TLS), got ${JSON.stringify(redact(value))}`,
    );
  }
  if (!url.hostname) throw new Error(`must name a host, got ${JSON.stringify(redact(value))}`);
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !(/^\d{1,10}$/.test(path) && Number(path) <= MAX_DATABASE)) {
    throw new Error(
      `must end with a database index from 0 to ${MAX_DATABASE} (or none), got ${JSON.stringify(`/${path}`)}`,
    );
  }
  return value;
}

/** `url` with its password (and user) hidden, for logs. */
export function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/**
 * A hint when a connection failed in a way a TLS mismatch explains: a `rediss://` URL whose
 * handshake never completes (a plain Redis waits for a command that never comes), or a
 * `redis://` URL whose first bytes a TLS port answered by closing the connection (Redis) or
 * with a TLS record (alert 0x15, handshake 0x16) where a reply was due.
 */
export function tlsHint(url: string, error: Error): string | undefined {
  const message = error.message;
  if (url.startsWith('rediss:')) {
    return /no answer within|TLS|SSL|secure|ECONNRESET|Connection is closed/i.test(message)
      ? 'rediss:// asks for TLS: if this Redis does not speak TLS, use redis://'
      : undefined;
  }
  return /ECONNRESET|got "\\u001[56]"|reply type byte/.test(message)
    ? 'if this Redis requires TLS, use rediss://'
    : undefined;
}
