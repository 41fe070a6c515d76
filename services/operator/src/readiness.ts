/**
 * /readyz: ready only while the API server and Redis both answer. A standby is ready too (it
 * must be able to take over); a replica that cannot reach either is not, so `kubectl get pods`
 * and alerts show the outage instead of a green operator that does nothing.
 */
import type { Redis } from 'ioredis';
import { statusOf } from './kube.ts';
import { withTimeout } from './timeout.ts';

interface ReadinessResult {
  ok: boolean;
  /** Per dependency: 'ok' or why not. */
  checks: Record<'kubernetes' | 'redis', string>;
}

export function createReadinessCheck(deps: {
  /** Any cheap authenticated read; a 404 still proves the API server answers. */
  kubeProbe: () => Promise<unknown>;
  redis: Pick<Redis, 'ping'>;
  timeoutMs: number;
}): () => Promise<ReadinessResult> {
  const check = async (what: string, p: () => Promise<unknown>, okStatus: (s?: number) => boolean) => {
    try {
      await withTimeout(p(), deps.timeoutMs, what);
      return 'ok';
    } catch (err) {
      return okStatus(statusOf(err)) ? 'ok' : String(err).slice(0, 200);
    }
  };
  return async () => {
    const [kubernetes, redis] = await Promise.all([
      check('kubernetes', deps.kubeProbe, (s) => s === 404),
      check(
        'redis',
        () => deps.redis.ping(),
        () => false,
      ),
    ]);
    return { ok: kubernetes === 'ok' && redis === 'ok', checks: { kubernetes, redis } };
  };
}
