/**
 * `node test/bench/call-end-push.ts` (round 39, `call-end`): what a call-making run's pushed end
 * (`<id> end [record, journal]`, includes/transition.lua) carries, against a trivial run's: a local
 * cluster with an instant App, `RUNS` runs (default 5) each of a trivial program and of `CALLS`
 * sequential calls (default 20), a subscriber of its own on `islet:run-events`; prints the mean
 * message bytes, the record's and the journal's, and a journal entry's bytes by its JSON field
 * (which of them the waiter's answer reads: `callsOf` in call-journal.ts). A count: no lock needed.
 * Round 40 (`journal-layout`): also `PAR` parallel calls a run (default 100; 0 = none), and for each
 * program the runs whose end was pushed, Redis's AOF bytes a run (`aof_current_size`) and its
 * `HGETALL`s a run (the gateway's read-back of a run and its journal when its end is not pushed).
 * `env ISLET_WRITE_FORMAT=2` reaches the cluster's processes (devstack `inheritedEnv`). Round 43
 * (`format-43`): reads `end3` too (its entries JSON values), and prints the tags pushed.
 */
import { channels, createRedis } from '@islet/core';
import { api } from '../e2e/helpers.ts';
import { parallelCalls, sequentialCalls } from './baselines.ts';
import { pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 5);
const CALLS = Number(process.env.CALLS ?? 20);
const PAR = Number(process.env.PAR ?? 100);
/** The entry fields `callsOf`/`toView` read for the waiter's answer. */
const READ = new Set(['i', 'b', 'op', 'st', 'at', 't0', 's', 'o', 'seq', 't1']);
const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
const sub = createRedis(cluster.redisUrl);
const info = createRedis(cluster.redisUrl);
/** `aof_current_size` and the `HGETALL` calls Redis ran so far. */
const counters = async (): Promise<[number, number]> => {
  const text = (await info.info('persistence')) + (await info.info('commandstats'));
  return [
    Number(/^aof_current_size:(\d+)/m.exec(text)?.[1] ?? Number.NaN),
    Number(/^cmdstat_hgetall:calls=(\d+)/m.exec(text)?.[1] ?? 0),
  ];
};
try {
  const connection = await pingConnection(a, port);
  const ends: string[] = [];
  await sub.subscribe(channels.runEvents);
  sub.on('message', (_c: string, m: string) => {
    if (/^\S+ end[23]? \[/.test(m)) ends.push(m);
  });
  const run = async (code: string) => JSON.stringify(await runWithApp(a, code, connection)).length;
  for (const [name, code] of [
    ['trivial', 'return 1'],
    [`${CALLS} calls`, sequentialCalls(CALLS)],
    ...(PAR > 0 ? [[`${PAR} parallel calls`, parallelCalls(PAR)] as const] : []),
  ] as const) {
    await run(code); // warm (scripts, the App's connection)
    await new Promise((r) => setTimeout(r, 200));
    ends.length = 0;
    let answer = 0;
    const [aof0, hgetall0] = await counters();
    for (let i = 0; i < RUNS; i++) answer += await run(code);
    await new Promise((r) => setTimeout(r, 200));
    const [aof1, hgetall1] = await counters();
    console.log(
      `${name}: ${ends.length} of ${RUNS} ends pushed; AOF ${((aof1 - aof0) / RUNS).toFixed(0)} B a run, HGETALL ${((hgetall1 - hgetall0) / RUNS).toFixed(2)} a run`,
    );
    const mean = (f: (m: string) => number) => ends.reduce((s, m) => s + f(m), 0) / ends.length;
    const parts = (m: string) => JSON.parse(m.slice(m.indexOf(' [') + 1)) as [string[], string[]];
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
      // `end3` (round 43): the entry is a JSON value in the message, not its text.
      const value = journal[i + 1] as unknown;
      const entry = typeof value === 'string' ? JSON.parse(value) : value;
      for (const [k, v] of Object.entries(entry as Record<string, unknown>))
        byField.set(k, (byField.get(k) ?? 0) + JSON.stringify(v).length + k.length + 4);
    }
    if (entries === 0) continue;
    console.log(`  an entry by field (B, its JSON; * = not read for the answer), ${entries} entries:`);
    console.log(
      `  ${[...byField].map(([k, v]) => `${READ.has(k) ? '' : '*'}${k} ${(v / entries).toFixed(0)}`).join(', ')}`,
    );
    console.log(`  an entry as pushed: ${JSON.stringify(journal[journal.indexOf('0') + 1])}`);
    console.log(`  tags: ${[...new Set(ends.map((m) => m.split(' ')[1]))].join(', ')}`);
  }
} finally {
  sub.disconnect();
  info.disconnect();
  await cluster.stop();
  app.close();
}
