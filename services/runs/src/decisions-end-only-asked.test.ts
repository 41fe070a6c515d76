/**
 * A run's end expires its decisions hash only when the run may have decisions (round 48
 * `decisions-end`, "only when the run may have decisions"): the end's mode argument carries a `d`
 * (run-store-args.ts `endModeArg`) unless its caller says the run has none (`noDecisions`: the
 * runner's first plain attempt that sent no call and asked no wider access). Read from Redis's
 * MONITOR (which lists the commands a script sends): which EXPIREs each end sent, in each end's
 * form — one server with and without the runner's lease (finish-run-14, finish-run-release-19)
 * and the Cluster's (transition-4, its decisions key left out). A run that asked still gets one
 * retention from its end (decisions-at-end.test.ts covers each path with the default). Real
 * redis-server. Fails on f63d2625 (no `noDecisions`; its end never expires the hash) and on the
 * round's first cut (every end sent the EXPIRE).
 */
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaDuring } from '../test/lua-during.ts';
import { completedEnd as end } from '../test/run-ends.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createDecisionStore } from './decision-store.ts';
import { journalKeys } from './keys.ts';
import type { RunLease } from './lease-scripts.ts';
import { createRunStore } from './run-store.ts';
import { endModeArg } from './run-store-args.ts';
import { createRunTransitions } from './run-transitions.ts';

const sealer = createTestSealer();
const RETENTION = 3600;
const decisionsOf = journalKeys().decisions;

/** The keys of the EXPIREs Redis ran from scripts while `body` ran (MONITOR, up to an end marker). */
async function expiredKeys(redis: Redis, body: () => Promise<unknown>): Promise<string[]> {
  const ran = await luaDuring(redis, body);
  return ran.filter((a) => a[0]?.toLowerCase() === 'expire').map((a) => a[1] as string);
}

describe("a run's end and its decisions' EXPIRE", () => {
  const r = useSuiteRedis();
  const runs = () => createRunStore(r.a, sealer, { retentionSeconds: RETENTION });
  // A Cluster's end writes the record's half alone with transition-4 (run-store.ts's finish hands
  // it its `noDecisions`), the tenant's after it.
  const transitions = () =>
    createRunTransitions(r.a, {
      maxEvents: '1000',
      retention: String(RETENTION),
      seal: (v) => sealer.seal(JSON.stringify(v)),
    });
  const lease = (jobId: string): RunLease => ({
    mode: 'read-only',
    tenant: 't1',
    jobId,
    share: 0.5,
    cap: 0,
    leaseMs: 30_000,
    acquired: () => undefined,
    held: () => true,
    released: () => undefined,
  });

  it('the end mode carries `d` unless the caller rules decisions out', () => {
    expect(endModeArg('5', true)).toBe('5');
    expect(endModeArg('5', undefined)).toBe('5d');
    expect(endModeArg('3', false)).toBe('3d');
  });

  for (const form of ['one server', 'leased', 'cluster'] as const) {
    it(`${form}: an end told the run has no decisions sends no EXPIRE on the key; one not told sends it`, async () => {
      const store = runs();
      const { transition } = transitions();
      for (const noDecisions of [true, false, undefined]) {
        const id = `${form.replace(' ', '-')}-${noDecisions}`;
        const run = runFixture(id, { tenant: 't1' });
        await store.create(run);
        const told = noDecisions === undefined ? {} : { noDecisions };
        const expired = await expiredKeys(r.b, () =>
          form === 'cluster'
            ? transition(
                run,
                { status: 'Completed' },
                { type: 'end', data: { status: 'Completed' } },
                noDecisions,
              )
            : store.finish(form === 'leased' ? { ...run, lease: lease(id) } : run, {
                ...end,
                sentNoCall: true,
                ...told,
              }),
        );
        // The record's EXPIRE went either way: the end was written.
        expect(expired).toContain(`islet:run:{${id}}`);
        expect(expired.includes(decisionsOf(id))).toBe(noDecisions !== true);
      }
    });
  }

  it('a run that asked, ended by a caller that did not rule decisions out, keeps them one retention from its end', async () => {
    const id = 'asked';
    const run = runFixture(id, { tenant: 't1' });
    const store = runs();
    await store.create(run);
    const decisions = createDecisionStore({
      redis: r.a,
      sealer,
      expireAfterMs: 86_400_000,
      ttlSeconds: RETENTION,
    });
    await decisions.request({
      tenant: 't1',
      mode: 'read-only',
      runId: id,
      index: 0,
      toolCallId: 'tc',
      code: 'return 1',
      approval: 'stop',
      call: { connectionId: 'bank', tool: 'pay', arguments: { cents: 1 } },
    });
    expect(await r.a.pttl(decisionsOf(id))).toBeGreaterThan(RETENTION * 1000);
    expect(await store.finish({ ...run, lease: lease(id) }, end)).toBe(true);
    const left = await r.a.pttl(decisionsOf(id));
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(RETENTION * 1000);
  });
});
