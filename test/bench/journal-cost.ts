/**
 * What the call journal's two steps cost Redis per call, alone (no cluster): on a redis-server of
 * its own, `RUNS` runs of `CALLS` calls each, claimed (`sendNow`, as an `allow` call) and completed
 * with their `call` event (stream append and wake-up) as the gateway does, one call at a time or,
 * with `PARALLEL=1`, each run's calls claimed together and completed together (one group each way).
 * Prints per call: commands (`INFO commandstats`, by name) and Redis's own time in the scripts
 * (`EVALSHA`'s usec). The counts do not depend on load; the time does, less than a round trip.
 * `CALLGRIND=1` (round 37, `call-gw2`): the server under callgrind (`callgrind-redis.ts`, only script
 * calls counted) and Redis's instructions a claim and a completion (p50 and mean over the measured
 * calls; `RUNS` default 5 there: each count asks `callgrind_control`); with `PARALLEL=1` (round 49
 * `binding-hop`) a run's claim group and its outcome groups, and their mean over the group's calls.
 */
import { createCallJournal } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { createTestSealer } from '../../services/runs/test/test-sealer.ts';
import { callgrindRedis } from './callgrind-redis.ts';

const CALLGRIND = process.env.CALLGRIND === '1';
const RUNS = Number(process.env.RUNS ?? (CALLGRIND ? 5 : 200));
const CALLS = Number(process.env.CALLS ?? 20);
const PARALLEL = process.env.PARALLEL === '1';

const grind = CALLGRIND ? await callgrindRedis('journal-cost') : undefined;
const server = grind ? undefined : await startRedis({ appendOnly: false });
const redis = grind ? grind.r : new Redis(server!.url);
/** Instructions of each measured claim and completion (CALLGRIND=1). */
const counted = { claim: [] as number[], complete: [] as number[] };
let measuring = false;
const count = async (kind: 'claim' | 'complete', step: () => Promise<unknown>) => {
  if (!grind || !measuring) return step();
  const before = grind.instructions();
  await step();
  counted[kind].push(grind.instructions() - before);
};
try {
  // The journal's own default layout unless ISLET_WRITE_FORMAT names one (round 40 `journal-layout`;
  // the default is 2 since round 41 `format-default`, 1 before; a base before round 40 ignores it).
  const format = process.env.ISLET_WRITE_FORMAT;
  const journal = createCallJournal({
    redis,
    sealer: createTestSealer(),
    ...(format === '1' || format === '2' ? { writeFormat: format } : {}),
  });
  // One source object for a run's calls of the binding, as the gateway passes it.
  const source = {
    connectionId: 'conn-b2f9befdbca4',
    connectionName: 'Bench',
    name: 'ping',
    kind: 'tool' as const,
  };
  const result = { type: 'result' as const, valueJson: '{"ok":true}' };
  const event = (runId: string) => ({
    streamKey: `islet:run:{${runId}}:events`,
    maxLen: 1000,
    type: 'call',
    sealedData: 'x'.repeat(200),
    channel: 'bench:progress',
    message: `${runId} call`,
  });
  const call = (i: number) => ({
    index: i,
    binding: 'bench.ping',
    argsJson: JSON.stringify({ i }),
    source,
    sendNow: true,
  });
  const oneRun = async (r: number) => {
    const runId = `run-${r}`;
    const attempt = await journal.nextAttempt(runId);
    if (PARALLEL) {
      // Counted a group at a time (round 49 `binding-hop`): each group is one script call.
      await count('claim', () =>
        Promise.all(Array.from({ length: CALLS }, (_, i) => journal.claim(runId, attempt, call(i)))),
      );
      await count('complete', () =>
        Promise.all(
          Array.from({ length: CALLS }, (_, i) => journal.complete(runId, i, result, event(runId))),
        ),
      );
    } else
      for (let i = 0; i < CALLS; i++) {
        await count('claim', () => journal.claim(runId, attempt, call(i)));
        await count('complete', () => journal.complete(runId, i, result, event(runId)));
      }
  };
  for (let r = 0; r < 20; r++) await oneRun(-1 - r);
  const stats = async () =>
    new Map(
      [...(await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)].map(
        (m) => [m[1]!, [Number(m[2]), Number(m[3])] as const],
      ),
    );
  const before = await stats();
  measuring = true;
  for (let r = 0; r < RUNS; r++) await oneRun(r);
  measuring = false;
  const after = await stats();
  const calls = RUNS * CALLS;
  // nextAttempt's MULTI (HINCRBY, EXPIRE) is the run's, not its calls': taken off.
  const ofRuns: Record<string, number> = { multi: RUNS, exec: RUNS, hincrby: RUNS, expire: RUNS };
  const rows = [...after]
    .map(
      ([name, [n, us]]) =>
        [
          name,
          n - (before.get(name)?.[0] ?? 0) - (ofRuns[name] ?? 0),
          us - (before.get(name)?.[1] ?? 0),
        ] as const,
    )
    .filter(([name, n]) => n > 0 && name !== 'info');
  const total = rows.reduce((s, [, n]) => s + n, 0);
  const evalsha = rows.find(([name]) => name === 'evalsha');
  console.log(
    `${RUNS} runs of ${CALLS} ${PARALLEL ? 'parallel' : 'sequential'} calls: ${(total / calls).toFixed(2)} commands a call ` +
      `(${rows.map(([name, n]) => `${name} ${(n / calls).toFixed(2)}`).join(', ')}); ` +
      `scripts' Redis time a call ${evalsha ? (evalsha[2] / calls).toFixed(1) : '?'} µs`,
  );
  for (const [kind, all] of Object.entries(counted)) {
    if (all.length === 0) continue;
    const sorted = [...all].sort((a, b) => a - b);
    const mean = all.reduce((a, b) => a + b, 0) / all.length;
    console.log(
      PARALLEL
        ? `Redis instructions a ${kind} group of ${CALLS} (${all.length}): p50 ${sorted[sorted.length >> 1]}, mean ${mean.toFixed(0)}; a call ${(mean / CALLS).toFixed(0)}`
        : `Redis instructions a ${kind} (${all.length}): p50 ${sorted[sorted.length >> 1]}, mean ${mean.toFixed(0)}`,
    );
  }
} finally {
  if (grind) await grind.stop();
  else {
    redis.disconnect();
    await server?.stop();
  }
}
