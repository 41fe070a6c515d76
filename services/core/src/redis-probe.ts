/**
 * A PING of every Redis master at scrape time, for islet_redis_up and islet_redis_ping_seconds:
 * an external Redis has no exporter beside it, so the gateway and the runners report what they
 * themselves see (a network policy or a DNS failure that cuts one component off shows too).
 */
import { type Redis, redisNodes } from './redis.ts';

const PING_TIMEOUT_MS = 1000;

/**
 * Seconds the slowest master took to answer PING, or undefined when one did not answer within
 * `timeoutMs` or the connection is not ready (commands would queue and the scrape would hang).
 */
export function redisPinger(redis: Redis, timeoutMs = PING_TIMEOUT_MS): () => Promise<number | undefined> {
  return async () => {
    if (redis.status !== 'ready') return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    try {
      return await Promise.race([
        (async () => {
          const nodes = await redisNodes(redis);
          const seconds = await Promise.all(
            nodes.map(async (node) => {
              const started = performance.now();
              await node.ping();
              return (performance.now() - started) / 1000;
            }),
          );
          return Math.max(...seconds);
        })(),
        timeout,
      ]);
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
}
