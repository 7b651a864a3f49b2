import { writeFileSync } from 'node:fs';

import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';

// What `rover supergraph compose` or a schema registry does: each subgraph's SDL as it serves
// it, composed into the supergraph the gateway loads.
const subgraphs = [
  { name: 'challenges', url: process.env.SUBGRAPH_URL ?? 'http://localhost:4001/' },
];
const services = await Promise.all(
  subgraphs.map(async ({ name, url }) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ _service { sdl } }' }),
    });
    const { data } = (await response.json()) as { data: { _service: { sdl: string } } };
    return { name, url, typeDefs: parse(data._service.sdl) };
  }),
);
const { supergraphSdl, errors } = composeServices(services);
if (!supergraphSdl) throw new Error(errors?.map((e) => e.message).join('\n'));
writeFileSync(process.env.SUPERGRAPH ?? 'supergraph.graphql', supergraphSdl);
console.log('Composed');
