import {
  ApolloClient,
  ApolloLink,
  CombinedGraphQLErrors,
  gql,
  HttpLink,
  InMemoryCache,
} from '@apollo/client';
import { ErrorLink } from '@apollo/client/link/error';
import { switchMap, timer } from 'rxjs';

// A RATE_LIMITED field did not run and counted nothing: wait the seconds it names, send it again.
const retryRateLimited = new ErrorLink(({ error, operation, forward }) => {
  if (!CombinedGraphQLErrors.is(error) || operation.getContext().retried) return;
  const blocked = error.errors.find((e) => e.extensions?.code === 'RATE_LIMITED');
  const seconds = blocked?.extensions?.retryAfter;
  if (typeof seconds !== 'number') return;
  operation.setContext({ retried: true });
  return timer(seconds * 1000).pipe(switchMap(() => forward(operation)));
});

const client = new ApolloClient({
  link: ApolloLink.from([
    retryRateLimited,
    new HttpLink({
      uri: process.env.GRAPHQL_URL ?? 'http://localhost:4000/graphql',
      headers: { authorization: `Bearer ${process.env.TEAM ?? 'team-1'}` },
    }),
  ]),
  cache: new InMemoryCache(),
});
const SUBMIT = gql`
  mutation {
    submitFlag(flag: "CTF{guess}")
  }
`;
for (let i = 0; i < 2; i++) {
  const { data } = await client.mutate({ mutation: SUBMIT });
  console.log(JSON.stringify(data));
}
