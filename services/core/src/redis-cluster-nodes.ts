/**
 * A Redis Cluster client's per-node connections, for the modules that change how a connection reads
 * its replies (redis-direct-read.ts, redis-text-replies.ts).
 *
 * An ioredis `Cluster` has no socket of its own: its connection pool holds one plain `Redis` a node
 * (made with `lazyConnect`, so each connects at its first command), and every command and reply goes
 * through one of them. The pool emits `+node` (the Cluster re-emits it) for each client it makes,
 * synchronously at the making: the nodes of the first `CLUSTER SLOTS`, a node first met by a MOVED /
 * ASK, a node's new client after its old one ended (a failover, a socket closed: per-node clients do
 * not reconnect by default, the pool drops them at `end` and makes a new one on the next refresh).
 * The Cluster's subscriber connections (`ClusterSubscriber`, sharded subscribers) are made outside
 * the pool, so `switchClusterNodes` does not reach them; `switchClusterSubscriber` (below) follows
 * the `ClusterSubscriber`'s for `readRepliesDirect` alone, as a one-server subscriber is read
 * directly and left out of the text mode. Sharded subscribers are left as they are (Islet uses none).
 *
 * A Cluster client this code does not recognise (no `nodes()` or `on()`) is left as it is.
 */
import type { Redis } from 'ioredis';

interface ClusterPool {
  isCluster?: boolean;
  nodes?: (role?: 'all') => Redis[];
  on?: (event: string, listener: (node: Redis) => void) => unknown;
}

/** What a per-connection switch returns (readRepliesDirect, readRepliesAsText). */
export interface Switched {
  switched: () => number;
}

/**
 * Applies `switchNode` to each per-node connection of the Cluster client `redis`, now and as the
 * pool makes them; returns the sockets switched so far over all of them (tests and benches read it).
 * Undefined when `redis` is not a Cluster client, or is one whose pool this code does not know.
 */
export function switchClusterNodes(
  redis: Redis,
  switchNode: (node: Redis) => Switched,
): Switched | undefined {
  const cluster = redis as unknown as ClusterPool;
  if (!cluster.isCluster || typeof cluster.nodes !== 'function' || typeof cluster.on !== 'function')
    return undefined;
  // Live nodes' counts read at each call; an ended node's folded into `retired` and let go.
  const live = new Map<Redis, Switched>();
  let retired = 0;
  const add = (node: Redis) => {
    if (!live.has(node)) live.set(node, switchNode(node));
  };
  cluster.on('+node', add);
  cluster.on('-node', (node: Redis) => {
    const counted = live.get(node);
    if (counted === undefined) return;
    retired += counted.switched();
    live.delete(node);
  });
  // The pool's nodes already made (a Cluster switched after it connected).
  for (const node of cluster.nodes('all')) add(node);
  return {
    switched: () => {
      let n = retired;
      for (const counted of live.values()) n += counted.switched();
      return n;
    },
  };
}

interface ClusterSubscriberHolder {
  isCluster?: boolean;
  subscriber?: { subscriber?: Redis | null; selectSubscriber?: () => void };
}

/**
 * Applies `switchNode` to the Cluster client's pub/sub connection (ioredis's `ClusterSubscriber`:
 * one plain `Redis`, made outside the pool with `lazyConnect` at the Cluster's start and made again
 * on another node when it ends), now and each time it is made again. On one server the gateway's
 * subscriber reads directly (its end pushes: one a run); on a Cluster its pushes went through the
 * stream's push and two ticks until round 51 (`cluster-path`). Only `readRepliesDirect` calls this:
 * a subscriber is kept out of the text mode on a Cluster as on one server. Undefined when `redis` is
 * not a Cluster client, or its subscriber is not one this code knows (`selectSubscriber`).
 */
export function switchClusterSubscriber(
  redis: Redis,
  switchNode: (node: Redis) => Switched,
): Switched | undefined {
  const holder = (redis as unknown as ClusterSubscriberHolder).subscriber;
  if (
    !(redis as unknown as ClusterSubscriberHolder).isCluster ||
    typeof holder?.selectSubscriber !== 'function'
  )
    return undefined;
  let current: Redis | undefined;
  let counted: Switched | undefined;
  let retired = 0;
  const follow = () => {
    const made = holder.subscriber ?? undefined;
    if (made === undefined || made === current) return;
    retired += counted?.switched() ?? 0;
    current = made;
    counted = switchNode(made);
  };
  const select = holder.selectSubscriber;
  // ioredis calls it on its own instance (`this.selectSubscriber()`): the wrapper is what it finds.
  holder.selectSubscriber = function selectAndSwitch(this: unknown) {
    select.call(this);
    follow();
  };
  follow();
  return { switched: () => retired + (counted?.switched() ?? 0) };
}
