/**
 * `node test/bench/call-end-push.ts` (round 39, `call-end`): what a call-making run's pushed end
 * (`<id> end [record, journal]`, includes/transition.lua) carries, against a trivial run's: a local
 * cluster with an instant App, `RUNS` runs (default 5) each of a trivial program and of `CALLS`
 * sequential calls (default 20), a subscriber of its own on `islet:run-events`; prints the mean
 * message bytes, the record's and the journal's, and a journal entry's bytes by its JSON field
 * (which of them the waiter's answer reads: `callsOf` in call-journal.ts). A count: no lock needed.
 */
import { channels, createRedis } from '@islet/core';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 5);
const CALLS = Number(process.env.CALLS ?? 20);
/** The entry fields `callsOf`/`toView` read for the waiter's answer. */
const READ = new Set(['i', 'b', 'op', 'st', 'at', 't0', 's', 'o', 'seq', 't1']);
const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
const sub = createRedis(cluster.redisUrl);
try {
  const connection = await pingConnection(a, port);
  const ends: string[] = [];
  await sub.subscribe(channels.runEvents);
  sub.on('message', (_c: string, m: string) => {
    if (m.includes(' end [')) ends.push(m);
  });
  const run = async (code: string) => JSON.stringify(await runWithApp(a, code, connection)).length;
  for (const [name, code] of [
    ['trivial', 'return 1'],
    [`${CALLS} calls`, sequentialCalls(CALLS)],
  ] as const) {
    ends.length = 0;
    let answer = 0;
    for (let i = 0; i < RUNS; i++) answer += await run(code);
    await new Promise((r) => setTimeout(r, 200));
    const mean = (f: (m: string) => number) => ends.reduce((s, m) => s + f(m), 0) / ends.length;
    const parts = (m: string) => JSON.parse(m.slice(m.indexOf(' end ') + 5)) as [string[], string[]];
    console.log(
      `${name}: ${ends.length} pushed ends, message ${mean((m) => m.length).toFixed(0)} B, record ${mean((m) => JSON.stringify(parts(m)[0]).length).toFixed(0)} B, journal ${mean((m) => JSON.stringify(parts(m)[1]).length).toFixed(0)} B (its escaped JSON); the waiter's answer ${(answer / RUNS).toFixed(0)} B`,
    );
    const last = ends.at(-1);
    if (!last) continue;
    const journal = parts(last)[1];
    const byField = new Map<string, number>();
    let entries = 0;
    for (let i = 0; i < journal.length; i += 2) {
      if (journal[i]!.startsWith('#')) continue;
      entries++;
      for (const [k, v] of Object.entries(JSON.parse(journal[i + 1]!) as Record<string, unknown>))
        byField.set(k, (byField.get(k) ?? 0) + JSON.stringify(v).length + k.length + 4);
    }
    if (entries === 0) continue;
    console.log(`  an entry by field (B, its JSON; * = not read for the answer), ${entries} entries:`);
    console.log(
      `  ${[...byField].map(([k, v]) => `${READ.has(k) ? '' : '*'}${k} ${(v / entries).toFixed(0)}`).join(', ')}`,
    );
    console.log(`  an entry as stored: ${journal[journal.indexOf('0') + 1]}`);
  }
} finally {
  sub.disconnect();
  await cluster.stop();
  app.close();
}
