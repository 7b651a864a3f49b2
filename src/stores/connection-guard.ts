import { performance } from 'node:perf_hooks';

import type { Cluster, Redis } from 'ioredis';

import { HIT_LUA, HIT_SHA } from './hit-script';

/*
 * A hit must reach Redis while its caller still waits for it, or never: a hit that sat in a
 * queue of ioredis and was sent after the caller had been answered (refused by the timeout, say)
 * would be counted all the same, and take a unit from a request that never ran. ioredis queues
 * commands while a connection is being opened: in the offline queue of a client or a Cluster
 * that is not ready (a frozen Redis can hold a client there for as long as it is frozen), and in
 * that of each Cluster node, whose connection ioredis opens on the first command for it. It also
 * sends commands again on its own: after a redirection, a NOSCRIPT reply or a reconnection.
 *
 * So a hit may wait for a connection at most `connectWaitMs` (below the caller's timeout), from
 * when it is handed to ioredis. The script's commands pass a check each time ioredis is asked to
 * send them, on the client, the Cluster and each of its nodes, queue flushes included: one that
 * would be sent later than that fails instead, unsent. And once a client has been without a
 * connection for longer than `connectWaitMs`, hits fail at once rather than queue (see
 * `connectionGate`). A Cluster's masters are connected when the store is made, so that the first
 * hits for each need not wait.
 *
 * A hit written to the socket of a connection that then hangs cannot be called back: Redis may
 * still count it after its caller gave up. That outcome is unknown, and documented as such.
 */

/** The parts of an ioredis command the check reads. */
interface ScriptCommand {
  readonly name: string;
  readonly args: readonly unknown[];
  reject(error: Error): void;
  readonly promise: Promise<unknown>;
}

interface Sender {
  sendCommand(command: ScriptCommand, ...rest: unknown[]): unknown;
}

/** How long the hits being handed to ioredis right now may wait for a connection, in ms. */
let handing: number | undefined;

/** Each script command: when a check first saw it, and how long it may wait. */
const tickets = new WeakMap<object, { readonly at: number; readonly waitMs: number }>();

/** Clients and nodes already checked; the wait given to commands ioredis sends on its own. */
const guarded = new WeakMap<object, { waitMs: number }>();

/** Runs `send`, which hands hits to ioredis synchronously; they may wait `waitMs` for a connection. */
export function handHits<T>(waitMs: number, send: () => T): T {
  handing = waitMs;
  try {
    return send();
  } finally {
    handing = undefined;
  }
}

/**
 * Makes `client` (and every node of a Cluster, present and future) check the script's commands
 * before sending them, and never resend one on its own after its connection dropped.
 */
export function guardConnections(client: Redis | Cluster, connectWaitMs: number): void {
  guard(client, connectWaitMs);
  if (!client.isCluster) {
    (client as Redis).options.autoResendUnfulfilledCommands = false;
    return;
  }
  const cluster = client as Cluster;
  // a command whose connection closed may have been counted: it must not be retried
  cluster.options.retryDelayOnFailover = 0;
  const onNode = (node: Redis): void => {
    node.options.autoResendUnfulfilledCommands = false;
    guard(node, connectWaitMs);
    if (!node.options.readOnly && node.status === 'wait') node.connect().catch(() => undefined);
  };
  cluster.nodes().forEach(onNode);
  cluster.on('+node', onNode);
}

/**
 * A check for a store's batches: why its hits must fail at once, if they must. A client that is
 * not ready is given `connectWaitMs`, from when a batch first found it so, to become ready;
 * meanwhile hits are handed over and may wait that long, and after it they fail without being
 * queued, so that an outage never fills ioredis' offline queue.
 */
export function connectionGate(
  client: Redis | Cluster,
  connectWaitMs: number,
): () => string | undefined {
  let unreadySince: number | undefined;
  return () => {
    if (client.status === 'ready') {
      unreadySince = undefined;
      return undefined;
    }
    const now = performance.now();
    unreadySince ??= now;
    if (now - unreadySince <= connectWaitMs) return undefined;
    const what = client.isCluster ? 'Redis Cluster' : 'Redis';
    return (
      `${what} has not been ready for ${Math.round(now - unreadySince)} ms ` +
      `(status: ${client.status}); the hits are not queued`
    );
  };
}

function isHit(command: ScriptCommand): boolean {
  const head = command.args[0];
  return (
    (command.name === 'evalsha' && head === HIT_SHA) ||
    (command.name === 'eval' && head === HIT_LUA)
  );
}

/** Wraps `target.sendCommand` once: the script's late commands fail, the others go through. */
function guard(target: Redis | Cluster, waitMs: number): void {
  const known = guarded.get(target);
  if (known) {
    // several stores on one client: ioredis' own resends get the shortest wait of them
    known.waitMs = Math.min(known.waitMs, waitMs);
    return;
  }
  const own = { waitMs };
  guarded.set(target, own);
  const sender = target as unknown as Sender;
  const send = sender.sendCommand.bind(sender);
  sender.sendCommand = (command: ScriptCommand, ...rest: unknown[]): unknown => {
    if (isHit(command)) {
      const now = performance.now();
      let ticket = tickets.get(command);
      if (!ticket) {
        ticket = { at: now, waitMs: handing ?? own.waitMs };
        tickets.set(command, ticket);
      }
      if (now - ticket.at > ticket.waitMs) {
        command.reject(
          new Error(
            `The hit waited ${Math.round(now - ticket.at)} ms for a Redis connection, more ` +
              `than connectWaitMs (${ticket.waitMs}); it is not sent`,
          ),
        );
        return command.promise;
      }
    }
    return send(command, ...rest);
  };
}
