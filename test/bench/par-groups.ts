/**
 * `node test/bench/par-groups.ts` (round 44, `outcome-group`): a 100-call run's outcome groups by
 * count, with Redis's MONITOR on (a count, not a time: no lock needed). Over `RUNS` (default 30)
 * runs of `CALLS` (default 100) parallel calls to the ping App after `WARM` (default 30): each
 * run's outcome groups (the outcome script's calls: two keys, a journal's and its run's event
 * stream) and their sizes, and the top-level Redis commands that came after the App's last
 * answer (the outcome groups `G<size>`, the run's end and the rest by command and first key).
 */
import { createRedis } from '@islet/core';
import { startOneClientCluster } from './cluster-figures.ts';
import { parallelCallRun } from './parallel-run.ts';
import { appStamps, startPingApp } from './ping-app.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const RUNS = Number(process.env.RUNS ?? 30);
const WARM = Number(process.env.WARM ?? 30);
const { app, port } = await startPingApp();
const stamps = appStamps(app);
const cluster = await startOneClientCluster('1');
const redis = createRedis(cluster.redisUrl);
interface Seen {
  atMs: number;
  name: string;
}
let seen: Seen[] = [];
const perRun: { groups: number[]; after: string[] }[] = [];
try {
  const run = await parallelCallRun(cluster, port, CALLS, 'Parallel calls');
  for (let i = 0; i < WARM; i++) await run();
  const monitor = await redis.monitor();
  monitor.on('monitor', (time: string, args: string[], source: string) => {
    if (source === 'lua') return;
    const cmd = (args[0] ?? '').toLowerCase();
    let name = cmd;
    if (cmd === 'evalsha' || cmd === 'eval') {
      const numkeys = Number(args[2]);
      const k1 = args[3] ?? '';
      const k2 = args[4] ?? '';
      if (numkeys === 2 && k1.includes('journal:{') && k2.endsWith(':events')) {
        const fields = args.length - 3 - numkeys - 4;
        name = `G${fields / 5}`;
      } else name = `S(${k1.replace(/\{[^}]*\}/, '{}').slice(0, 40)})`;
    } else if (args[1]) name = `${cmd}(${args[1].replace(/\{[^}]*\}/, '{}').slice(0, 30)})`;
    seen.push({ atMs: Number(time) * 1000, name });
  });
  await new Promise((r) => setTimeout(r, 200));
  for (let i = 0; i < RUNS; i++) {
    seen = [];
    stamps.clear();
    await run();
    await new Promise((r) => setTimeout(r, 30));
    const lastAnswer = performance.timeOrigin + Math.max(...stamps.answered);
    const groups = seen.filter((s) => s.name.startsWith('G')).map((s) => Number(s.name.slice(1)));
    const after = seen.filter((s) => s.atMs > lastAnswer).map((s) => s.name);
    perRun.push({ groups, after });
  }
  monitor.disconnect();
} finally {
  redis.disconnect();
  await cluster.stop();
  app.close();
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const groupsARun = perRun.map((r) => r.groups.length);
const groupsAfter = perRun.map((r) => r.after.filter((n) => n.startsWith('G')).length);
const histogram = (xs: number[]) => {
  const h = new Map<number, number>();
  for (const x of xs) h.set(x, (h.get(x) ?? 0) + 1);
  return [...h.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([k, v]) => `${k}:${v}`)
    .join(' ');
};
console.log(`${RUNS} runs of ${CALLS} calls`);
console.log(
  `outcome groups a run: mean ${mean(groupsARun).toFixed(2)} (runs by count ${histogram(groupsARun)})`,
);
console.log(
  `outcome groups after the App's last answer: mean ${mean(groupsAfter).toFixed(2)} (runs by count ${histogram(groupsAfter)})`,
);
console.log(
  `top-level commands after the App's last answer: mean ${mean(perRun.map((r) => r.after.length)).toFixed(2)}`,
);
for (const r of perRun.slice(0, 8))
  console.log(`  groups ${r.groups.join(' ')} | after: ${r.after.join(' ')}`);
