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
 * the pool, so nothing here reaches them: they are left as they are, as a one-server subscriber is
 * left out of the text mode.
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
