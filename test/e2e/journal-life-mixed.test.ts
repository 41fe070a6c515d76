/**
 * A run's journal while the run lives (round 46 `journal-life`: no expiry until the run's end, which
 * gives it the record's), with a run started on one release and ended on the other, beside 9f886855
 * (whose claims, outcomes and later starts set one retention from their write; its end expires the
 * journal with the record, as this release's does). Each direction: the run's first execution
 * answers its first call, then spins; its runner is frozen (SIGSTOP of its process group) until its
 * job's lock lapses, and the other release's runner's stalled check takes the job and replays it
 * (attempt 2): the answered call is answered from the journal, never delivered twice; the run
 * completes once; its journal expires with its record, at the same instant. Started on 9f886855 and
 * taken over by this release: the journal's expiry 9f886855 set is taken off at the replay's start
 * (includes/begin-attempt.lua), so the run may wait past the retention. Started on this release: no
 * expiry while it runs (fails on 9f886855 as the head: its first claim sets one). Real processes, one
 * redis-server, real BullMQ.
 */
import { type createRedis, keys } from '@islet/core';
import type { Cluster } from '@islet/devstack';
import { journalKeys } from '@islet/runs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type startAppServer, until, untilEnded } from './helpers.ts';
import { connectApp, echoArguments, hasCommit, type MixedReleases, startMixed } from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_JOURNAL_LIFE_PREVIOUS_RELEASE ?? '9f886855';
const present = hasCommit(PREVIOUS);

/** Both releases: a lapsed lock is taken back within a second; a runner's own fetch takes a submit. */
const ENV = {
  ISLET_RUNNER_LOCK_DURATION_MS: '2000',
  ISLET_RUNNER_STALLED_INTERVAL_MS: '500',
  ISLET_RUNNER_MAX_STALLED_COUNT: '20',
  ISLET_JOB_ATTEMPTS: '20',
  ISLET_IDLE_HANDOFF: 'off',
};
/** A call answered, then CPU (the window the runner is frozen in), then a second call. */
const code =
  'const r = await apps.echo.say({ w: 1 }); let x = 0; for (let i = 0; i < 6e8; i++) x = (x + i) % 1000003; const s = await apps.echo.say({ w: 2 }); return [r.structuredContent.w, s.structuredContent.w, x]';

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let app: Awaited<ReturnType<typeof startAppServer>> | undefined;
let redis: ReturnType<typeof createRedis> | undefined;
let connectionId = '';
const frozen = new Set<number>();
const wake = () => {
  for (const pid of frozen) process.kill(-pid, 'SIGCONT');
  frozen.clear();
};

/**
 * A run submitted on `first`'s gateway and begun by its runner (the other's killed), frozen after
 * its first call's answer; `second`'s runner restarted takes it over. Returns the run's id and what
 * the test reads of it while the replay lives and after its end.
 */
async function takenOver(first: Cluster, second: Cluster, label: string) {
  await second.killRunner(0, 'SIGKILL');
  const res = await api(first.url, first.devKey)('POST', '/v1/runs', {
    code,
    description: `journal life ${label}`,
    sessionId: `jl-${label}`,
    turnId: 't',
    callId: 'c',
    connections: [connectionId],
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const id = res.body.id as string;
  const journal = journalKeys().journal(id);
  await until(async () => ((await redis!.hget(journal, '0')) ?? '').includes('"st":"done"'), 60_000, 5);
  const pid = first.runners[0]!.pid!;
  process.kill(-pid, 'SIGSTOP');
  frozen.add(pid);
  const firstTtl = await redis!.pttl(journal);
  await second.restartRunner(0);
  await until(async () => (await redis!.hget(keys.run(id), 'attempts')) === '2', 60_000, 20);
  // The replay has begun: its start (and, on this release, every write) leaves no expiry.
  const replayTtl = await redis!.pttl(journal);
  const ended = await untilEnded(second.url, second.devKey, id);
  wake();
  const [recordAt, journalAt] = (await Promise.all([
    redis!.call('PEXPIRETIME', keys.run(id)),
    redis!.call('PEXPIRETIME', journal),
  ])) as [number, number];
  const perKey = new Map<string, number>();
  // Deliveries are this run's alone (each test empties the list first): once per call key.
  for (const d of app!.deliveries) perKey.set(d.idempotencyKey, (perKey.get(d.idempotencyKey) ?? 0) + 1);
  return { id, ended, firstTtl, replayTtl, recordAt, journalAt, perKey };
}

describe.skipIf(!present)(`a run's journal while it lives, beside ${PREVIOUS}`, () => {
  beforeAll(async () => {
    mixed = await startMixed(PREVIOUS, ENV, ENV);
    head = mixed.head;
    prev = mixed.prev;
    redis = mixed.redis;
    ({ app, connectionId } = await connectApp(head, echoArguments, 'Echo', [
      { name: 'say', inputSchema: { type: 'object' } },
    ]));
  }, 240_000);

  afterAll(async () => {
    wake();
    await app?.close();
    await mixed?.stop();
  });

  it(`started on ${PREVIOUS}, taken over and ended by this release: its expiry taken off at the replay, the answered call not sent again`, async () => {
    app!.deliveries.length = 0;
    const got = await takenOver(prev!, head!, 'p2h');
    expect(got.ended.status, JSON.stringify(got.ended)).toBe('Completed');
    // 9f886855's claim and outcome set one; this release's replay took it off.
    expect(got.firstTtl).toBeGreaterThan(0);
    expect(got.replayTtl).toBe(-1);
    expect(got.recordAt).toBeGreaterThan(0);
    // The end script's EXPIREs, the journal's after the record's (Redis 7.0 reads its clock for each).
    expect(got.journalAt).toBeGreaterThanOrEqual(got.recordAt);
    expect([...got.perKey.values()]).toEqual([1, 1]);
  }, 300_000);

  it(`started on this release, taken over and ended by ${PREVIOUS}: no expiry while it ran, the end's with the record`, async () => {
    app!.deliveries.length = 0;
    const got = await takenOver(head!, prev!, 'h2p');
    expect(got.ended.status, JSON.stringify(got.ended)).toBe('Completed');
    expect(got.firstTtl).toBe(-1);
    // 9f886855's replay start sets one retention (its own behaviour, unchanged).
    expect(got.replayTtl).toBeGreaterThan(0);
    expect(got.recordAt).toBeGreaterThan(0);
    // The end script's EXPIREs, the journal's after the record's (Redis 7.0 reads its clock for each).
    expect(got.journalAt).toBeGreaterThanOrEqual(got.recordAt);
    expect([...got.perKey.values()]).toEqual([1, 1]);
  }, 300_000);
});
