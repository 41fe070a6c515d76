/**
 * A registration's compact form's reader shipped, its writer off (test/bench/README.md round 44
 * `handoff-terms`): beside the previous release's processes on one Redis, with this release's
 * defaults (ISLET_HANDOFF_COMPACT_TERMS off), hand-offs still work both ways — this release's
 * gateway hands jobs to the previous release's idle runner (its full-form registration read by the
 * script that also reads the compact form), and the previous release's gateway to this release's
 * runner (which writes the full form by default). Every waited run answered Completed, run once,
 * handed (the submit's script pushed its answer to the worker's hand-off key: MONITOR).
 */
import type { Cluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formOf, handOffsDuring, registrations } from './handoff-watch.ts';
import { call, hasCommit, type MixedReleases, startMixed } from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_HANDOFF_PREVIOUS_RELEASE ?? 'e8feb7a0';
const present = hasCommit(PREVIOUS);

let mixed: MixedReleases | undefined;

describe.skipIf(!present)(`hand-offs beside ${PREVIOUS}, the compact registration's writer off`, () => {
  beforeAll(async () => {
    delete process.env.ISLET_HANDOFF_COMPACT_TERMS;
    mixed = await startMixed(PREVIOUS);
  }, 180_000);

  afterAll(async () => {
    await mixed?.stop();
  });

  /** Three waited runs through `on`'s gateway, each handed to the one idle runner. */
  async function handedThrough(on: Cluster, name: string) {
    for (let i = 0; i < 3; i++) {
      const stored = await registrations(mixed!.redis);
      expect(stored.map(formOf)).toEqual(['full']);
      const { result: res, pushes } = await handOffsDuring(mixed!.head.redisUrl, () =>
        call(
          on.url,
          on.devKey,
          'POST',
          '/v1/runs',
          {
            code: `return ${i}`,
            description: `ht ${name}`,
            sessionId: `ht-${name}`,
            turnId: 't',
            callId: `c${i}`,
          },
          { prefer: 'wait=30' },
        ),
      );
      expect(res.status, res.text).toBe(200);
      const body = JSON.parse(res.text) as { id: string; status: string; attempts?: number };
      expect(body.status, res.text).toBe('Completed');
      expect(pushes).toBe(1);
      expect(await mixed!.redis.hget(`islet:run:{${body.id}}`, 'attempts')).toBe('1');
    }
  }

  it(`this release's runner (full form by default) handed jobs by ${PREVIOUS}'s gateway and by this release's`, async () => {
    await mixed!.prev.killRunner(0, 'SIGTERM');
    await handedThrough(mixed!.prev, 'prev-gw-head-runner');
    await handedThrough(mixed!.head, 'head-gw-head-runner');
  }, 240_000);

  it(`${PREVIOUS}'s runner handed jobs by this release's gateway and by its own`, async () => {
    await mixed!.prev.restartRunner(0);
    await mixed!.head.killRunner(0, 'SIGTERM');
    await handedThrough(mixed!.head, 'head-gw-prev-runner');
    await handedThrough(mixed!.prev, 'prev-gw-prev-runner');
  }, 240_000);
});
