/**
 * The gateway's hand-off liveness check on by default (ISLET_HANDOFF_LIVE_CHECK, round 47
 * `live-check-on`; @islet/runs handoff-live.ts) beside the previous release's runner (6b60376a, whose
 * runners hold a live channel per idle worker since round 46 and whose gateways do not check), every
 * process at its defaults on one Redis: this release's gateway hands 6b60376a's live runner its
 * submits (the submit's script pushed the fetch's answer to its hand-off key: MONITOR), each run
 * once; and once that runner is SIGKILLed, its registration still standing takes no submit (no
 * lock, the registration dropped by the add, nothing taken back on the gateway's /metrics), the run
 * fetched by the restarted runner at its first attempt. Real processes (devstack and
 * test/e2e/previous-release.ts). No time is asserted. With this release's gateway at 6b60376a's
 * default (the check off) the killed runner's registration is handed the submit: its lock is the
 * dead worker's token ("expected 'w…:h:1' to be null") and the gateway takes it back (+1).
 * And the other way: this release's runner, whose compact registration carries begin-attempt's TTL
 * (unread since round 46) empty, its place kept, is handed jobs by 6b60376a's gateway as by this
 * release's (a registration without the element fails 6b60376a's submit: test/bench/ttl-drop-probe.ts).
 */
import { keys } from '@islet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  followed,
  handOffsDuring,
  holders,
  IDLE,
  QUEUE,
  reclaimsCounted,
  registered,
  registrations,
} from './handoff-watch.ts';
import { call, hasCommit, type MixedReleases, startMixed } from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_LIVE_CHECK_PREVIOUS_RELEASE ?? '6b60376a';

let mixed: MixedReleases | undefined;

const body = (i: number, name: string) => ({
  code: `return ${i}`,
  description: `lc ${name}`,
  sessionId: `lc-${name}`,
  turnId: 't',
  callId: `c${i}`,
});

describe.skipIf(!hasCommit(PREVIOUS))(`the liveness check on by default beside ${PREVIOUS}'s runner`, () => {
  beforeAll(async () => {
    delete process.env.ISLET_HANDOFF_LIVE_CHECK;
    mixed = await startMixed(PREVIOUS);
    // This release's runner stopped (its close removes its registration): the previous release's
    // is the one registered idle.
    await mixed.head.killRunner(0, 'SIGTERM');
  }, 180_000);

  afterAll(async () => {
    await mixed?.stop();
  });

  it(`this release's gateway hands ${PREVIOUS}'s live runner its submits (it holds its channel)`, async () => {
    const head = mixed!.head;
    const paths: number[] = [];
    for (let i = 0; i < 3; i++) {
      const worker = await registered(mixed!.redis);
      expect(await holders(mixed!.redis, worker)).toBe(1);
      const { result, pushes } = await handOffsDuring(head.redisUrl, () =>
        call(head.url, head.devKey, 'POST', '/v1/runs', body(i, 'handed'), { prefer: 'wait=30' }),
      );
      expect(result.status, result.text).toBe(200);
      const run = JSON.parse(result.text) as { id: string; status: string };
      expect(run.status, result.text).toBe('Completed');
      expect(await mixed!.redis.hget(keys.run(run.id), 'attempts')).toBe('1');
      paths.push(pushes);
    }
    // One push to the worker's hand-off key a submit: handed, never left to a fetch (0).
    expect(paths).toEqual([1, 1, 1]);
    expect(await reclaimsCounted(head)).toBe(0);
  }, 150_000);

  it(`${PREVIOUS}'s runner SIGKILLed: its standing registration takes no submit, nothing taken back`, async () => {
    const head = mixed!.head;
    const prev = mixed!.prev;
    const killed = await registered(mixed!.redis);
    expect(await holders(mixed!.redis, killed)).toBe(1);
    const before = await reclaimsCounted(head);
    await prev.killRunner(0, 'SIGKILL');
    while ((await holders(mixed!.redis, killed)) !== 0) await new Promise((r) => setTimeout(r, 20));
    expect(await mixed!.redis.zscore(IDLE, killed)).not.toBeNull();
    const res = await call(head.url, head.devKey, 'POST', '/v1/runs', body(9, 'killed'));
    expect(res.status, res.text).toBe(202);
    const id = (JSON.parse(res.text) as { id: string }).id;
    expect(await mixed!.redis.get(`${QUEUE}${id}:lock`)).toBeNull();
    expect(await mixed!.redis.zscore(IDLE, killed)).toBeNull();
    await prev.restartRunner(0);
    expect(await followed(head, id)).toBe('Completed');
    expect(await mixed!.redis.hget(`${QUEUE}${id}`, 'ats')).toBe('1');
    expect((await reclaimsCounted(head)) - before).toBe(0);
    expect(head.output('gateway', 0)).not.toContain('handed job taken back');
  }, 150_000);

  it(`this release's runner (its registration's TTL element empty) handed jobs by ${PREVIOUS}'s gateway and by this release's`, async () => {
    await mixed!.prev.killRunner(0, 'SIGTERM');
    await mixed!.head.restartRunner(0);
    for (const [name, g] of [
      ['prev-gw', mixed!.prev],
      ['head-gw', mixed!.head],
    ] as const) {
      const paths: number[] = [];
      for (let i = 0; i < 3; i++) {
        const stored = await registrations(mixed!.redis);
        expect(stored).toHaveLength(1);
        // The compact form, begin-attempt's TTL (element 9, unread since round 46) empty (6b60376a: '604800').
        const terms = JSON.parse(stored[0] as string) as unknown[];
        expect(terms).toHaveLength(11);
        expect(terms[8]).toBe('');
        const { result, pushes } = await handOffsDuring(g.redisUrl, () =>
          call(g.url, g.devKey, 'POST', '/v1/runs', body(i, name), { prefer: 'wait=30' }),
        );
        expect(result.status, result.text).toBe(200);
        const run = JSON.parse(result.text) as { id: string; status: string };
        expect(run.status, result.text).toBe('Completed');
        expect(await mixed!.redis.hget(keys.run(run.id), 'attempts')).toBe('1');
        paths.push(pushes);
      }
      expect(paths, name).toEqual([1, 1, 1]);
    }
  }, 240_000);
});
