/**
 * A registration's compact form end to end (test/bench/README.md round 44 `handoff-terms`, round 45
 * `terms-on`): at its defaults (ISLET_HANDOFF_COMPACT_TERMS on) the runner registers in the compact form and this release's
 * gateway hands it every waited run's job (the submit's script reads the form with the mode's
 * names in its text), each answered Completed, run once; a run with calls too.
 */
import { createRedis } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formOf, handOffsDuring, registrations } from './handoff-watch.ts';
import { call } from './mixed-releases.ts';

let cluster: Cluster | undefined;
let redis: ReturnType<typeof createRedis> | undefined;

describe('hand-offs with compact registrations (the runner at its defaults)', () => {
  beforeAll(async () => {
    delete process.env.ISLET_HANDOFF_COMPACT_TERMS;
    cluster = await startCluster({
      gateways: 1,
      runners: [{ modes: ['read-only'] }],
    });
    redis = createRedis(cluster.redisUrl);
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('every waited run handed to the idle runner through its compact registration, run once', async () => {
    for (let i = 0; i < 5; i++) {
      const stored = await registrations(redis!);
      expect(stored.map(formOf)).toEqual(['compact']);
      const { result: res, pushes } = await handOffsDuring(cluster!.redisUrl, () =>
        call(
          cluster!.url,
          cluster!.devKey,
          'POST',
          '/v1/runs',
          { code: `return ${i} + 1`, description: 'compact', sessionId: 'hc', turnId: 't', callId: `c${i}` },
          { prefer: 'wait=30' },
        ),
      );
      expect(res.status, res.text).toBe(200);
      const body = JSON.parse(res.text) as { id: string; status: string; result?: unknown };
      expect(body.status, res.text).toBe('Completed');
      expect(pushes).toBe(1);
      expect(await redis!.hget(`islet:run:{${body.id}}`, 'attempts')).toBe('1');
    }
  }, 120_000);
});
