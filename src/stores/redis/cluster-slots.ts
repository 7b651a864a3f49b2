/*
 * Which slot of a Redis Cluster a key lives in, computed here as the cluster does (CRC16 of the
 * key's hash tag, modulo 16384), so that a store can group its hits by the master that serves
 * them without asking Redis, and without a dependency that a strict package manager would not
 * let this library reach through ioredis.
 */

/** CRC16-CCITT (XMODEM), as Redis Cluster computes it, one entry per byte value. */
const CRC16 = new Uint16Array(256);
for (let byte = 0; byte < 256; byte++) {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
  CRC16[byte] = crc & 0xffff;
}

const SLOTS = 16384;
// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;
const UTF8 = new TextEncoder();

/** CRC16 of `text`'s UTF-8 bytes (read from the string itself when it is ASCII). */
function crc16(text: string): number {
  const bytes = ASCII.test(text) ? undefined : UTF8.encode(text);
  const length = bytes ? bytes.length : text.length;
  let crc = 0;
  for (let i = 0; i < length; i++) {
    const byte = bytes ? (bytes[i] as number) : text.charCodeAt(i);
    crc = ((crc << 8) & 0xffff) ^ (CRC16[(crc >> 8) ^ byte] as number);
  }
  return crc;
}

/**
 * The slot of `key`: Redis hashes only what stands between the first `{` and the next `}` when
 * that is not empty, else the whole key, as the UTF-8 bytes a client sends.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return crc16(close > open + 1 ? key.slice(open + 1, close) : key) % SLOTS;
}
