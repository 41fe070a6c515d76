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
import type { Redis } from '@islet/core';
import type { Cluster } from '@islet/devstack';
import { describe, expect, it } from 'vitest';
import {
  holders,
  killedRunnerTakesNoSubmit,
  oneRunnerCluster,
  previousRunnerOnly,
  QUEUE,
  reclaimsCounted,
  registered,
  submitOne,
} from './handoff-watch.ts';
import { hasCommit, type MixedReleases } from './mixed-releases.ts';

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

  // Redis drops the dead runner's connections (its subscription with them) while its registration
  // still stands (its expiry is seconds off): the case round 45 took back. Here the add drops it.
  it('takes no submit: the add drops its registration, the restarted runner fetches the job and runs it once', async () => {
    await killedRunnerTakesNoSubmit(cluster!, redis!, submit);
  }, 150_000);
});

let mixed: MixedReleases | undefined;

describe.skipIf(!hasCommit(PREVIOUS))(
  `${PREVIOUS}'s runner beside this release's gateway checking liveness`,
  () => {
    previousRunnerOnly(PREVIOUS, LIVE, (started) => {
      mixed = started;
      redis = started.redis;
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
