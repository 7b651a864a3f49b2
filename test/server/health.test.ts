import { createMemoryStore, type RateLimitStore } from '../../src';
import { startCtfServer } from '../../server/src/app';
import { ctfData } from '../support/ctf';

/*
 * The reference server's `GET /health` reports ready only once `store.ready()` resolved: a load
 * balancer sends no request to a server whose store is still setting up.
 */

test('/health answers 503 "starting" until store.ready() resolves, then 200', async () => {
  let becomeReady!: () => void;
  const ready = new Promise<void>((resolve) => (becomeReady = resolve));
  const memory = createMemoryStore();
  const store: RateLimitStore = { ...memory, ready: () => ready };
  const server = await startCtfServer({ data: ctfData(1), store, port: 0 });
  try {
    const health = () => fetch(server.url.replace('/graphql', '/health'));
    const before = await health();
    expect(before.status).toBe(503);
    expect(await before.json()).toEqual({ status: 'starting', store: 'setting up' });
    becomeReady();
    await ready;
    await new Promise((resolve) => setImmediate(resolve));
    const after = await health();
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual({ status: 'ok', store: 'up' });
  } finally {
    await server.stop();
  }
});
