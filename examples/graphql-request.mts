import { ClientError, GraphQLClient } from 'graphql-request';

const client = new GraphQLClient(process.env.GRAPHQL_URL ?? 'http://localhost:4000/graphql', {
  headers: { authorization: `Bearer ${process.env.TEAM ?? 'team-1'}` },
});

// A RATE_LIMITED field did not run and counted nothing: wait the seconds it names, send it again.
async function requestWithRetry<T>(document: string): Promise<T> {
  try {
    return await client.request<T>(document);
  } catch (error) {
    const errors = error instanceof ClientError ? (error.response.errors ?? []) : [];
    const blocked = errors.find((e) => e.extensions?.code === 'RATE_LIMITED');
    const seconds = blocked?.extensions?.retryAfter;
    if (typeof seconds !== 'number') throw error;
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    return client.request<T>(document);
  }
}

for (let i = 0; i < 2; i++) {
  console.log(
    JSON.stringify(await requestWithRetry('mutation { submitFlag(flag: "CTF{guess}") }')),
  );
}
