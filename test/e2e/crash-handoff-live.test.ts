/**
 * A runner killed (SIGKILL) while its worker is registered idle, beside a gateway checking the
 * registration's liveness (ISLET_HANDOFF_LIVE_CHECK=on; @islet/runs handoff-live.ts, round 46
 * `takeback`): the worker's live channel went with the runner's connections, so the next submit is
 * not handed to the dead registration (crash-handoff.test.ts: handed, then taken back by the
 * gateway 1 s later) — the add drops it and the job waits for the restarted runner's fetch, its
 * first attempt, nothing taken back. Also beside 9f886855's runner (which holds no live channel):
 * with the check on, its registrations take no job either, and its runs still complete (fetched).
 * Real processes (devstack: redis-server, gateways, runners). No time is asserted: which way the
 * job went (its lock, its events, its attempts, the registration, the take-back counter). Fails on
 * 9f886855: its live runner holds no channel ("expected 0 to be 1"); with the check off the submit
 * is handed to the dead registration (its lock the killed worker's token, not null).
 */
import { keys, type Redis } from '@islet/core';
import type { Cluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  followed,
  holders,
  IDLE,
  jobEvents,
  oneRunnerCluster,
  QUEUE,
  reclaimsCounted,
  registered,
  submitOne,
} from './handoff-watch.ts';
import { hasCommit, type MixedReleases, startMixed } from './mixed-releases.ts';

const LIVE = { ISLET_HANDOFF_LIVE_CHECK: 'on' };
const PREVIOUS = process.env.ISLET_HANDOFF_LIVE_PREVIOUS_RELEASE ?? '9f886855';
let cluster: Cluster | undefined;
let redis: Redis | undefined;

const submit = (c: Cluster, prefer?: string) => submitOne(c, 'live hand-off', 'lh', prefer);

describe('a runner killed while registered idle, beside a gateway checking liveness', () => {
  oneRunnerCluster(LIVE, (started) => {
    cluster = started?.cluster;
    redis = started?.redis;
  });

  it('takes no submit: the add drops its registration, the restarted runner fetches the job and runs it once', async () => {
    const c = cluster!;
    expect((await submit(c, 'wait=30')).body.status).toBe('Completed');
    const killed = await registered(redis!);
    // A live worker holds its channel.
    expect(await holders(redis!, killed)).toBe(1);
    await c.killRunner(0, 'SIGKILL');
    // Redis dropped the dead runner's connections (its subscription with them); its registration
    // still stands (its expiry is seconds off): the case round 45 took back.
    while ((await holders(redis!, killed)) !== 0) await new Promise((r) => setTimeout(r, 20));
    expect(await redis!.zscore(IDLE, killed)).not.toBeNull();
    const before = await reclaimsCounted(c);
    const { status, body } = await submit(c);
    expect(status).toBe(202);
    const id = body.id;
    // Not handed: no lock, the dead registration gone with the add.
    expect(await redis!.get(`${QUEUE}${id}:lock`)).toBeNull();
    expect(await redis!.zscore(IDLE, killed)).toBeNull();
    await c.restartRunner(0);
    expect(await followed(c, id)).toBe('Completed');
    // Its first attempt, fetched; never moved back from active, never stalled; nothing taken back.
    const seen = await jobEvents(redis!, id);
    expect(seen).not.toContain('waiting<-active');
    expect(seen).not.toContain('stalled');
    expect(await redis!.hget(`${QUEUE}${id}`, 'ats')).toBe('1');
    expect(await redis!.hget(keys.run(id), 'attempts')).toBe('1');
    expect(await reclaimsCounted(c)).toBe(before);
    expect(c.output('gateway', 0)).not.toContain('handed job taken back');
  }, 150_000);
});

let mixed: MixedReleases | undefined;

describe.skipIf(!hasCommit(PREVIOUS))(
  `${PREVIOUS}'s runner beside this release's gateway checking liveness`,
  () => {
    beforeAll(async () => {
      mixed = await startMixed(PREVIOUS, LIVE);
      redis = mixed.redis;
      // This release's runner stopped: the previous release's is the one registered idle.
      await mixed.head.killRunner(0, 'SIGTERM');
    }, 180_000);

    afterAll(async () => {
      await mixed?.stop();
    });

    it(`${PREVIOUS}'s registrations hold no channel and take no job; its runs complete (fetched), none lost`, async () => {
      const head = mixed!.head;
      for (let i = 0; i < 3; i++) {
        const prev = await registered(redis!);
        expect(await holders(redis!, prev)).toBe(0);
        const { body } = await submit(head, 'wait=30');
        expect(body.status).toBe('Completed');
        expect(await redis!.hget(`${QUEUE}${body.id}`, 'ats')).toBe('1');
      }
      expect(await reclaimsCounted(head)).toBe(0);
    }, 150_000);
  },
);
