import { performance } from 'node:perf_hooks';

import type { Cluster, Redis } from 'ioredis';

import { HIT_LUA, HIT_SHA } from './hit-script';

/*
 * A hit must reach Redis while its caller still waits for it, or never: a hit that sat in a
 * queue of ioredis and was sent after the caller had been answered (refused by the timeout, say)
 * would be counted all the same, and take a unit from a request that never ran. ioredis queues
 * a command in three places: the offline queue of a client that is not ready (where it would
 * wait for a frozen or unreachable Redis for as long as the client keeps trying), the offline
 * queue of a Cluster that is not ready, and the offline queue of each Cluster node, whose
 * connection ioredis opens lazily, on the first command for that node; it also resends commands
 * after a dropped connection, a redirection or a NOSCRIPT reply. So the script's commands pass a
 * check each time ioredis is asked to send them, at every one of these levels:
 *
 * - a single-node client sends a hit only while it is ready and its socket writable; otherwise
 *   the hit fails at once, and never enters the offline queue;
 * - a Cluster sends a hit only while it is ready;
 * - a hit may wait for a Cluster node's connection to open for at most `connectWaitMs`,
 *   measured from when it was first handed to ioredis: one that would be sent later fails
 *   instead, unsent. The masters' connections are opened when the store is made (and when a
 *   master joins), so that the first hits for each need not wait for one.
 *
 * A hit written to the socket of a connection that then hangs cannot be called back: Redis may
 * still count it after its caller gave up. That outcome is unknown, and documented as such.
 */

/** The parts of an ioredis command the checks read. */
interface ScriptCommand {
  readonly name: string;
  readonly args: readonly unknown[];
  reject(error: Error): void;
  readonly promise: Promise<unknown>;
}

interface Sender {
  sendCommand(command: ScriptCommand, ...rest: unknown[]): unknown;
}

/** Why a hit must not be sent now, if it must not; `waitedMs` since it was first handed over. */
type Check = (waitedMs: number, waitMs: number) => string | undefined;

/** How long the hits being handed to ioredis right now may wait for a connection, in ms. */
let handing: number | undefined;

/** Each script command: when a check first saw it, and how long it may wait. */
const tickets = new WeakMap<object, { readonly at: number; readonly waitMs: number }>();

/** Clients and nodes already checked; the wait given to commands ioredis resends on its own. */
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
  if (!client.isCluster) {
    const redis = client as Redis;
    redis.options.autoResendUnfulfilledCommands = false;
    guard(redis, 0, () =>
      redis.status === 'ready' && redis.stream?.writable
        ? undefined
        : `Redis is not connected (status: ${redis.status}); the hit is not queued`,
    );
    return;
  }
  const cluster = client as Cluster;
  // a command whose connection closed may have been counted: it must not be retried
  cluster.options.retryDelayOnFailover = 0;
  guard(cluster, connectWaitMs, (waitedMs, waitMs) => {
    if (cluster.status !== 'ready') {
      return `Redis Cluster is not ready (status: ${cluster.status}); the hit is not queued`;
    }
    return tooLate(waitedMs, waitMs);
  });
  const onNode = (node: Redis): void => {
    node.options.autoResendUnfulfilledCommands = false;
    guard(node, connectWaitMs, tooLate);
    // open a master's connection now rather than on its first hit, which would wait for it
    if (!node.options.readOnly && node.status === 'wait') node.connect().catch(() => undefined);
  };
  cluster.nodes().forEach(onNode);
  cluster.on('+node', onNode);
}

function tooLate(waitedMs: number, waitMs: number): string | undefined {
  if (waitedMs <= waitMs) return undefined;
  return (
    `The hit waited ${Math.round(waitedMs)} ms for a Redis connection, more than ` +
    `connectWaitMs (${waitMs}); it is not sent`
  );
}

function isHit(command: ScriptCommand): boolean {
  const head = command.args[0];
  return (
    (command.name === 'evalsha' && head === HIT_SHA) ||
    (command.name === 'eval' && head === HIT_LUA)
  );
}

/** Wraps `target.sendCommand` once: the script's commands pass `check`, the others go through. */
function guard(target: Redis | Cluster, waitMs: number, check: Check): void {
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
      let ticket = tickets.get(command);
      if (!ticket) {
        ticket = { at: performance.now(), waitMs: handing ?? own.waitMs };
        tickets.set(command, ticket);
      }
      const refusal = check(performance.now() - ticket.at, ticket.waitMs);
      if (refusal !== undefined) {
        command.reject(new Error(refusal));
        return command.promise;
      }
    }
    return send(command, ...rest);
  };
}
