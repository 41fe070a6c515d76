/**
 * `node test/bench/par-tail.ts` (round 44, `end-tail`): the Redis commands that follow a 100-call
 * run's App's last answer, in Redis's order, each with its time (MONITOR's, Redis's clock: the
 * box's wall clock, as the bench's stamps), the process whose connection sent it (gateway, runner,
 * bench: from `ss -tnp` of the client's port) and, for a script, which one (BullMQ's by the SHA-1
 * of its text, the outcome group `G<n>`, the run's end `END`, others by their first key); and
 * where the client's answer came (`>>ANSWER`). A count and an order, not a time claim (no lock).
 * `FSYNC=1`: Redis's fdatasyncs too (`perf record` of its pid, `-k mono`, put on the wall clock),
 * each as `fsync <from>–<to>`, so a command's write is seen done or not before the answer.
 * `RUNS` (default 20) runs of `CALLS` (default 100) calls after `WARM` (default 20). The fair share
 * `BENCH_TENANT_SHARE` (default 1: off, as par-cpu.ts, par-groups.ts and par-layout.ts run it; the
 * cluster bench's row runs the default 0.5, where the run's end is fused with its job's completion).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createRedis } from '@islet/core';
import { FINISH_RUN_RELEASE } from '@islet/runs';
import {
  END_AND_COMPLETE_SHA,
  END_COMPLETE_START_SHA,
} from '../../services/runner/src/end-complete-store.ts';
import { FINISH_RUN } from '../../services/runs/src/run-store-scripts.ts';
import { startOneClientCluster } from './cluster-figures.ts';
import { parallelCallRun } from './parallel-run.ts';
import { startPerfRecord } from './perf-trace.ts';
import { appStamps, startPingApp } from './ping-app.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const RUNS = Number(process.env.RUNS ?? 20);
const WARM = Number(process.env.WARM ?? 20);

// BullMQ's scripts by the SHA-1 of their text (what EVALSHA names).
const bullNames = new Map<string, string>();
const require = createRequire(import.meta.url);
const scriptsDir = join(dirname(require.resolve('bullmq')), 'scripts');
for (const f of readdirSync(scriptsDir).filter((f) => /-\d+\.js$/.test(f))) {
  const mod = require(join(scriptsDir, f)) as Record<string, { name: string; content: string }>;
  for (const s of Object.values(mod))
    if (s?.content) bullNames.set(createHash('sha1').update(s.content).digest('hex'), s.name);
}
// The run's end, alone or fused with its job's completion (end-complete-store.ts).
const isletNames = new Map<string, string>([
  [FINISH_RUN.sha, 'END(finish-run-14)'],
  [FINISH_RUN_RELEASE.sha, 'END(finish-run-release-19)'],
  [END_AND_COMPLETE_SHA, 'END+complete'],
  [END_COMPLETE_START_SHA, 'END+complete+start'],
]);

const { app, port } = await startPingApp();
const stamps = appStamps(app);
const cluster = await startOneClientCluster('1');
const redis = createRedis(cluster.redisUrl);
const redisPort = new URL(cluster.redisUrl).port;

/** client port → the process's role, from `ss -tnp` (its cmdline names gateway or runner). */
function portRoles(): Map<string, string> {
  const roles = new Map<string, string>();
  const out = execFileSync('ss', ['-tnpH', `dport = :${redisPort}`], { encoding: 'utf8' });
  for (const line of out.split('\n')) {
    const m = /\S+\s+\S+\s+\S+\s+\S+:(\d+)\s+\S+\s+.*pid=(\d+)/.exec(line);
    if (!m) continue;
    let role = `pid${m[2]}`;
    try {
      const cmd = readFileSync(`/proc/${m[2]}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (Number(m[2]) === process.pid) role = 'bench';
      else if (/gateway/.test(cmd)) role = 'gw';
      else if (/runner/.test(cmd)) role = 'runner';
      else role = cmd.slice(0, 40);
    } catch {}
    roles.set(m[1] as string, role);
  }
  return roles;
}

interface Seen {
  atMs: number;
  name: string;
  port: string;
}
let seen: Seen[] = [];
const FSYNC = process.env.FSYNC === '1';
// The wall clock at the kernel's monotonic zero (perf's `-k mono` stamps → MONITOR's clock).
const wallAtMono = performance.timeOrigin + performance.now() - Number(process.hrtime.bigint()) / 1e6;
const runWindows: { from: number; to: number }[] = [];
const redisPid = (): number => {
  const out = execFileSync('ss', ['-tlnpH', `sport = :${redisPort}`], { encoding: 'utf8' });
  return Number(/pid=(\d+)/.exec(out)?.[1]);
};
const perfFile = `/tmp/par-tail-${process.pid}.perf`;
const tails: { lastApp: number; answerAt: number; tail: Seen[] }[] = [];
const fsyncs: { from: number; to: number }[] = [];
const perRun: {
  after: string[];
  beforeAnswer: number;
  afterAnswer: number;
  /** ms from the App's last answer: the last group, the end, the client's answer. */
  lastGroup: number;
  end: number;
  answer: number;
}[] = [];
const tally = new Map<string, { before: number; after: number }>();
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
      const bull = bullNames.get(args[1] ?? '');
      const islet = isletNames.get(args[1] ?? '');
      if (numkeys === 2 && k1.includes('journal:{') && k2.endsWith(':events')) name = 'G';
      else if (islet) name = islet;
      else if (bull) name = `bull:${bull}(${k1.replace(/\{[^}]*\}/, '{}').slice(0, 24)})`;
      else if (k1.includes('run:{')) name = `S${numkeys}(${k1.replace(/\{[^}]*\}/, '{}').slice(0, 24)})`;
      else name = `S${numkeys}:${(args[1] ?? '').slice(0, 6)}(${k1.replace(/\{[^}]*\}/, '{}').slice(0, 30)})`;
    } else if (args[1]) name = `${cmd}(${args[1].replace(/\{[^}]*\}/, '{}').slice(0, 30)})`;
    seen.push({ atMs: Number(time) * 1000, name, port: source.split(':').pop() ?? '' });
  });
  await new Promise((r) => setTimeout(r, 200));
  const tracer = FSYNC
    ? await startPerfRecord(
        perfFile,
        [redisPid()],
        ['syscalls:sys_enter_fdatasync', 'syscalls:sys_exit_fdatasync'],
      )
    : undefined;
  for (let i = 0; i < RUNS; i++) {
    seen = [];
    stamps.clear();
    const from = performance.timeOrigin + performance.now();
    await run();
    const answerAt = performance.timeOrigin + performance.now();
    runWindows.push({ from, to: answerAt });
    await new Promise((r) => setTimeout(r, 40));
    const roles = portRoles();
    const lastApp = performance.timeOrigin + Math.max(...stamps.answered);
    const tail = seen.filter((s) => s.atMs > lastApp);
    tails.push({ lastApp, answerAt, tail });
    const lines: string[] = [];
    let answered = false;
    let before = 0;
    let after = 0;
    for (const s of tail) {
      if (!answered && s.atMs > answerAt) {
        lines.push(`>>ANSWER ${(answerAt - lastApp).toFixed(2)}`);
        answered = true;
      }
      const who = roles.get(s.port) ?? `:${s.port}`;
      const key = `${who} ${s.name}`;
      const t = tally.get(key) ?? { before: 0, after: 0 };
      if (answered) t.after++;
      else t.before++;
      tally.set(key, t);
      if (answered) after++;
      else before++;
      lines.push(`${(s.atMs - lastApp).toFixed(2)} ${key}`);
    }
    if (!answered) lines.push(`>>ANSWER ${(answerAt - lastApp).toFixed(2)}`);
    const groupsAt = tail.filter((s) => s.name === 'G').map((s) => s.atMs - lastApp);
    const endAt = tail.find((s) => s.name.startsWith('END'));
    perRun.push({
      after: lines,
      beforeAnswer: before,
      afterAnswer: after,
      lastGroup: groupsAt.length ? Math.max(...groupsAt) : 0,
      end: endAt ? endAt.atMs - lastApp : Number.NaN,
      answer: answerAt - lastApp,
    });
  }
  monitor.disconnect();
  if (tracer) {
    const exited = new Promise((r) => tracer.once('exit', r));
    tracer.kill('SIGINT');
    await exited;
    const text = execFileSync('perf', ['script', '-i', perfFile, '-F', 'time,event'], {
      maxBuffer: 1 << 28,
    }).toString();
    let enter = Number.NaN;
    for (const line of text.split('\n')) {
      const m = /^\s*(\d+\.\d+):\s+syscalls:sys_(enter|exit)_fdatasync/.exec(line);
      if (!m) continue;
      const at = Number(m[1]) * 1000 + wallAtMono;
      if (m[2] === 'enter') enter = at;
      else if (!Number.isNaN(enter)) fsyncs.push({ from: enter, to: at });
    }
  }
} finally {
  redis.disconnect();
  await cluster.stop();
  app.close();
}
if (FSYNC) {
  const before: number[] = [];
  const after: number[] = [];
  for (const [i, t] of tails.entries()) {
    const mine = fsyncs.filter(
      (f) => f.to > t.lastApp && f.from < (runWindows[i + 1]?.from ?? Number.POSITIVE_INFINITY),
    );
    before.push(mine.filter((f) => f.to <= t.answerAt).length);
    after.push(mine.filter((f) => f.to > t.answerAt).length);
    const lines = perRun[i]?.after;
    if (!lines) continue;
    for (const f of mine)
      lines.push(
        `fsync ${(f.from - t.lastApp).toFixed(2)}–${(f.to - t.lastApp).toFixed(2)} (${(f.to - f.from).toFixed(2)} ms)`,
      );
    const at = (l: string) =>
      Number(/^(?:fsync )?(-?[\d.]+)/.exec(l)?.[1] ?? /ANSWER ([\d.]+)/.exec(l)?.[1] ?? Number.NaN);
    lines.sort((a, b) => {
      const x = at(a);
      const y = at(b);
      return x - y;
    });
  }
  // The end's write done (the first fsync ending after the end ran) against the answer and against
  // BullMQ's own completion after it (share 1): sent only once the end's reply was read.
  let completionAfterEndFsync = 0;
  let completions = 0;
  const endToAnswer: number[] = [];
  for (const t of tails) {
    const end = t.tail.find((x) => x.name.startsWith('END'));
    if (!end) continue;
    const done = fsyncs.find((f) => f.to > end.atMs);
    if (!done) continue;
    endToAnswer.push(t.answerAt - done.to);
    const completion = t.tail.find((x) => x.name.startsWith('bull:moveToFinished') && x.atMs > end.atMs);
    if (!completion) continue;
    completions++;
    if (completion.atMs >= done.to) completionAfterEndFsync++;
  }
  endToAnswer.sort((a, b) => a - b);
  console.log(
    `the end's fsync done → the client's answer p50 ${(endToAnswer[Math.floor((endToAnswer.length - 1) / 2)] ?? Number.NaN).toFixed(2)} ms; ` +
      `BullMQ's completion after the end ran after the end's fsync in ${completionAfterEndFsync} of ${completions} runs`,
  );
  const m = (xs: number[]) => (xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1)).toFixed(2);
  console.log(
    `fsyncs ended after the App's last answer: before the client's answer ${m(before)} a run (${before.join(' ')}), after it ${m(after)} (${after.join(' ')})`,
  );
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(
  `${RUNS} runs of ${CALLS} calls; commands after the App's last answer (ms from it, process, command)`,
);
console.log(
  `before the client's answer: mean ${mean(perRun.map((r) => r.beforeAnswer)).toFixed(2)}; after it: ${mean(perRun.map((r) => r.afterAnswer)).toFixed(2)}`,
);
const p50 = (xs: number[]) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length ? (s[Math.floor((s.length - 1) / 2)] as number) : Number.NaN;
};
console.log(
  `p50 ms from the App's last answer: last outcome group run ${p50(perRun.map((r) => r.lastGroup)).toFixed(2)}, ` +
    `the end run ${p50(perRun.map((r) => r.end)).toFixed(2)} (the last group → the end ${p50(perRun.map((r) => r.end - r.lastGroup)).toFixed(2)}), ` +
    `the client's answer ${p50(perRun.map((r) => r.answer)).toFixed(2)} (the end → the answer ${p50(perRun.map((r) => r.answer - r.end)).toFixed(2)})`,
);
console.log('by process and command (runs: before the answer / after it):');
for (const [k, v] of [...tally.entries()].sort((a, b) => b[1].before + b[1].after - a[1].before - a[1].after))
  console.log(`  ${k}: ${v.before} / ${v.after}`);
for (const [i, r] of perRun.slice(0, Number(process.env.SHOW ?? 6)).entries())
  console.log(`run ${i + 1}:\n  ${r.after.join('\n  ')}`);
