/**
 * A runner killed (SIGKILL) while its worker is registered idle for the direct hand-off (runner
 * README, "Direct hand-off") leaves that registration standing until its expiry (~6 s), and the
 * gateway's add hands the next submit to it: the job goes active under the dead worker's token
 * (test/bench/README.md, round 44 `restart-gap`). Until round 45 the job then waited for BullMQ's
 * stalled check (its 30 s lock, then the checks), its run `Running`. Now the gateway that handed it
 * takes it back once the answer stayed on the dead worker's key (gateway handoff-reclaim-store.ts):
 * the job goes from active to the wait list (BullMQ's `waiting` event from `active`), never
 * stalled, and the new runner runs it once. Real processes (devstack: redis-server, a gateway, a
 * runner). No time is asserted: which path the job took (its lock token, its events, its stalled
 * count), its attempts, its one completion. Fails on 9ec25e04: the job is taken back by the stalled
 * check (its events `waiting<-active` and `stalled`: "expected [ 'waiting<-active', 'stalled' ] to not
 * include 'stalled'", 37 s into the test).
 */
import { createRedis, keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from './mixed-releases.ts';

const QUEUE = 'islet:{runs-read-only}:';
const IDLE = `${QUEUE}idle`;
let cluster: Cluster | undefined;
let redis: ReturnType<typeof createRedis> | undefined;

const submit = async (c: Cluster, prefer?: string) => {
  const res = await call(
    c.url,
    c.devKey,
    'POST',
    '/v1/runs',
    { code: 'return 1', description: 'crash hand-off', sessionId: 'ch', turnId: 't', callId: 'c' },
    prefer ? { prefer } : {},
  );
  return { status: res.status, body: JSON.parse(res.text) as { id: string; status: string } };
};

/** The job's events in BullMQ's stream, as `event` or `event<-prev`. */
async function events(jobId: string): Promise<string[]> {
  const out: string[] = [];
  for (const [, flat] of await redis!.xrange(`${QUEUE}events`, '-', '+')) {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i] as string] = flat[i + 1] as string;
    if (f.jobId === jobId) out.push(f.prev ? `${f.event}<-${f.prev}` : String(f.event));
  }
  return out;
}

describe('a runner killed while registered idle for the hand-off', () => {
  beforeAll(async () => {
    cluster = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'] }] });
    redis = createRedis(cluster.redisUrl);
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('the run handed to it is taken back by the gateway (not stalled) and runs once on the new runner', async () => {
    const c = cluster!;
    expect((await submit(c, 'wait=30')).body.status).toBe('Completed');
    // The runner idle and registered: its registration is the one an add chooses.
    let killed: string | undefined;
    while (killed === undefined) {
      killed = (await redis!.zrange(IDLE, -1, -1))[0];
      if (killed === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    await c.killRunner(0, 'SIGKILL');
    const { status, body } = await submit(c);
    expect(status).toBe(202);
    const id = body.id;
    // Handed to the dead worker: its lock is one of the killed worker's tokens (or, already taken
    // back, no lock and the job no longer active under it: the events below say which way).
    const lock = await redis!.get(`${QUEUE}${id}:lock`);
    expect(lock === null || lock.startsWith(`${killed}:h:`), `lock ${lock}`).toBe(true);
    await c.restartRunner(0);
    let record: { status: string; attempts?: number } = { status: 'Queued' };
    for (;;) {
      const read = await call(c.url, c.devKey, 'GET', `/v1/code-runs/${id}`);
      record = JSON.parse(read.text) as typeof record;
      if (record.status !== 'Running' && record.status !== 'Queued') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(record.status).toBe('Completed');
    const seen = await events(id);
    // The way back: BullMQ's move from active to wait (the gateway's take-back), never its stalled
    // check (9ec25e04: `stalled` after the same `waiting<-active`, stc 1).
    expect(seen, c.output('gateway', 0)).toContain('waiting<-active');
    expect(seen).not.toContain('stalled');
    expect(await redis!.hget(`${QUEUE}${id}`, 'stc')).toBeNull();
    // Two starts (the handed one, begun and never run; the new runner's: a run twice would be a
    // third), the record's attempts alike, one completion.
    expect(await redis!.hget(`${QUEUE}${id}`, 'ats')).toBe('2');
    expect(await redis!.hget(keys.run(id), 'attempts')).toBe('2');
    expect(await redis!.zscore(`${QUEUE}completed`, id)).not.toBeNull();
    expect(c.output('gateway', 0)).toContain('handed job taken back');
  }, 150_000);
});
