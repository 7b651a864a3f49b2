import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { serveSubscriptions } from '../../examples/subscription-identity';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';
import { wsClient } from '../support/subscriptions';

/*
 * docs/directive.md: a subscription over graphql-ws counts against the identity its socket sent
 * in `connectionParams` (examples/subscription-identity.ts), on a real socket and a real Redis.
 */

let server: Server;
let url: string;
let stop: () => Promise<void>;
const clients: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  server = createServer();
  const served = serveSubscriptions(server, store);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  stop = async () => {
    await Promise.all(clients.map((c) => c.close()));
    await served.dispose();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await store.close?.();
  };
});

afterAll(async () => {
  await stop();
  await closeClients();
});

async function socket(connectionParams: Record<string, unknown>) {
  const client = await wsClient(url, connectionParams);
  clients.push(client);
  return client;
}

test("each socket's starts count against the team of its connectionParams", async () => {
  const alpha = await socket({ authToken: 'team-alpha' });
  const again = await socket({ authToken: 'team-alpha' });
  const beta = await socket({ authToken: 'team-beta' });
  const query = 'subscription { scores }';
  // two sockets of one team share its limit of 2; another team has its own
  expect([await alpha.start(query), await again.start(query), await alpha.start(query)]).toEqual([
    'started',
    'started',
    'RATE_LIMITED',
  ]);
  expect(await beta.start(query)).toBe('started');
});

test('a socket that sent no token starts nothing', async () => {
  const anonymous = await socket({});
  expect(await anonymous.start('subscription { scores }')).toBe('UNAUTHENTICATED');
});
