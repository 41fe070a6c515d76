/**
 * The compact registration's writer on by default (test/bench/README.md round 45 `terms-on`):
 * beside the previous release's processes (9ec25e04, which reads the compact form in a submit
 * script holding its mode's names and writes the full form by default) on one Redis, every process
 * at its defaults, hand-offs work both ways — this release's runner registers in the compact form
 * and 9ec25e04's gateway hands it jobs as this release's does; 9ec25e04's runner registers in the
 * full form and this release's gateway hands it jobs as 9ec25e04's does. Every waited run answered
 * Completed, run once, and its path asserted: handed (the submit's script pushed the fetch's answer
 * to the worker's hand-off key: MONITOR), never left to the worker's fetch.
 */
import type { Cluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formOf, handOffsDuring, registrations } from './handoff-watch.ts';
import { call, hasCommit, type MixedReleases, OLDER_THAN_6B60376A, startMixed } from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_HANDOFF_PREVIOUS_RELEASE ?? '9ec25e04';
const present = hasCommit(PREVIOUS);

let mixed: MixedReleases | undefined;

/** A submit's path: handed by its own script (one push to a hand-off key) or left to a fetch. */
const pathOf = (pushes: number) => (pushes === 1 ? 'hand-off' : pushes === 0 ? 'fetch' : `${pushes} pushes`);

describe.skipIf(!present)(`hand-offs beside ${PREVIOUS}, the compact registration written by default`, () => {
  beforeAll(async () => {
    // Every process at its defaults: this release's runner compact, the previous one's full; but for
    // the liveness check, off for a roll from a release older than 6b60376a (its runners hold no
    // live channel: a checking gateway hands them nothing; live-check-mixed.test.ts is 6b60376a's).
    delete process.env.ISLET_HANDOFF_COMPACT_TERMS;
    mixed = await startMixed(PREVIOUS, OLDER_THAN_6B60376A);
  }, 180_000);

  afterAll(async () => {
    await mixed?.stop();
  });

  /** Three waited runs through `on`'s gateway, each handed to the one idle runner (`form` its registration's). */
  async function handedThrough(on: Cluster, name: string, form: 'full' | 'compact') {
    const paths: string[] = [];
    for (let i = 0; i < 3; i++) {
      const stored = await registrations(mixed!.redis);
      expect(stored.map(formOf)).toEqual([form]);
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
      paths.push(pathOf(pushes));
      expect(await mixed!.redis.hget(`islet:run:{${body.id}}`, 'attempts')).toBe('1');
    }
    expect(paths).toEqual(['hand-off', 'hand-off', 'hand-off']);
  }

  it(`this release's runner (compact form by default) handed jobs by ${PREVIOUS}'s gateway and by this release's`, async () => {
    await mixed!.prev.killRunner(0, 'SIGTERM');
    await handedThrough(mixed!.prev, 'prev-gw-head-runner', 'compact');
    await handedThrough(mixed!.head, 'head-gw-head-runner', 'compact');
  }, 240_000);

  it(`${PREVIOUS}'s runner (full form by default) handed jobs by this release's gateway and by its own`, async () => {
    await mixed!.prev.restartRunner(0);
    await mixed!.head.killRunner(0, 'SIGTERM');
    await handedThrough(mixed!.head, 'head-gw-prev-runner', 'full');
    await handedThrough(mixed!.prev, 'prev-gw-prev-runner', 'full');
  }, 240_000);
});
