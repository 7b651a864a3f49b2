import {
  CLIENT_FAMILIES,
  clientState,
  closeClient,
  connectClient,
  dropClient,
  makeClient,
  sendWith,
  type ClientFamily,
} from '../../kit/clients';

export { CLIENT_FAMILIES, clientState, closeClient, dropClient, makeClient, type ClientFamily };

/** A client of one family, as an application holds it; `errors` are those its listener heard. */
export interface FamilyClient {
  readonly family: ClientFamily;
  /** The client itself: each family has its own type, and the store takes them all. */
  readonly client: any;
  readonly errors: Error[];
  /** Sends a raw command (on a Cluster, to the master of `key`). */
  send(command: string[], key?: string): Promise<unknown>;
  close(): Promise<void>;
  /** Drops the client at once, waiting for nothing (as an application does when Redis is down). */
  drop(): void;
}

const open = new Set<FamilyClient>();

/** A connected client of `family` to one Redis (`url`) or a Cluster (`nodes`). */
export async function connectFamily(
  family: ClientFamily,
  where: { url?: string; nodes?: readonly { host: string; port: number }[]; options?: object },
): Promise<FamilyClient> {
  const errors: Error[] = [];
  const client: unknown = await connectClient(family, where, errors);
  const made: FamilyClient = {
    family,
    client,
    errors,
    send: (command, key) => sendWith(family, client, command, key),
    close: async () => {
      open.delete(made);
      await closeClient(family, client);
    },
    drop: () => {
      open.delete(made);
      dropClient(family, client);
    },
  };
  open.add(made);
  return made;
}

/** Closes every client {@link connectFamily} opened and the test did not close. */
export async function closeFamilies(): Promise<void> {
  await Promise.all([...open].map((c) => c.close()));
}
