/**
 * `node test/bench/call-side-perf.ts`: where the runner's and its sandbox hosts' CPU goes on lone
 * sequential binding calls (round 40, `call-floor`): `call-trace.ts`'s cluster (1 gateway, 1
 * runner, an instant App in this process), warmed up, then `perf record -g -e cpu-clock` of the
 * runner and every sandbox host (all their threads) while `RUNS` programs of `CALLS` sequential
 * calls run. Prints, a call (the runs' own start and end spread over their calls), each process's
 * threads by name, then for each process the innermost JS frame of each sample (the runner's JIT
 * code named by `--perf-basic-prof-only-functions`; a host's by the same flag when the host was
 * started with it, else V8's and isolated-vm's natives), and with `NATIVE=1` the innermost native
 * frame that is not the kernel's. `WHO=gateway` records the gateway instead of the runner.
 *
 *   node test/bench/call-side-perf.ts            (RUNS 20, CALLS 40)
 */
import { execFileSync, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { tracedProcesses } from './perf-trace.ts';
import { pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 20);
const CALLS = Number(process.env.CALLS ?? 40);
const WARM = Number(process.env.WARM ?? 20);
const HZ = 4999;
const TOP = Number(process.env.TOP ?? 30);
const NATIVE = process.env.NATIVE === '1';
const WHO = process.env.WHO === 'gateway' ? 'gateway' : 'runner';
const OUT = `/tmp/call-side-perf-${process.pid}.data`;

const { app, port } = await startPingApp();
const cluster = await startCallCluster({ NODE_OPTIONS: '--perf-basic-prof-only-functions' });
const a = api(cluster.url, cluster.devKey);
try {
  const connection = await pingConnection(a, port);
  const program = sequentialCalls(CALLS);
  const run = () => runWithApp(a, program, connection);
  for (let i = 0; i < WARM; i++) await run();
  const { pids, label } = tracedProcesses();
  const traced = pids.filter((p) => label.get(p) === WHO || label.get(p) === 'host');
  const perf = spawn(
    'perf',
    ['record', '-q', '-g', '-e', 'cpu-clock', '-F', String(HZ), '-p', traced.join(','), '-o', OUT],
    {
      stdio: 'ignore',
    },
  );
  await new Promise((r) => setTimeout(r, 1000));
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) await run();
  const wallMs = performance.now() - t0;
  const exited = new Promise((r) => perf.on('exit', r));
  perf.kill('SIGINT');
  await exited;
  const text = execFileSync('perf', ['script', '-i', OUT, '-F', 'comm,pid,tid,ip,sym,dso'], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  rmSync(OUT, { force: true });
  // KEEP=<file>: the script's text kept for a look at the stacks.
  if (process.env.KEEP) writeFileSync(process.env.KEEP, text);
  const calls = RUNS * CALLS;
  const us = (n: number) => ((n * 1e6) / HZ / calls).toFixed(1).padStart(7);
  const frame = (line: string) =>
    line
      .trim()
      .replace(/^[0-9a-f]+ /, '')
      .replace(/\+0x[0-9a-f]+ \(.*$/, '')
      .replace(/ \(.*\)$/, '')
      .replace(/file:\/\/\/.*?\/services\//, 's/')
      .replace(/\/\S*?\/node_modules\//, 'nm/');
  const byProc = new Map<string, Map<string, number>>();
  const threads = new Map<string, number>();
  for (const block of text.split('\n\n')) {
    const [head, ...rest] = block.split('\n').filter((l) => l.trim());
    if (!head) continue;
    const m = /^\s*(.+?)\s+(\d+)\/(\d+)/.exec(head);
    if (!m) continue;
    const pid = Number(m[2]);
    const kind = label.get(pid) ?? 'host';
    const thread = `${kind} ${m[1]}${Number(m[3]) === pid ? ' (main)' : ''}`;
    threads.set(thread, (threads.get(thread) ?? 0) + 1);
    const frames = rest.map(frame);
    const js = frames.find((f) => f.startsWith('JS:') || f.startsWith('LazyCompile:'));
    const native = frames.find((f) => !/kallsyms|^\[unknown\]|^\w+$/.test(f) && !f.startsWith('JS:'));
    const key = NATIVE ? (native ?? frames[0] ?? '?') : (js ?? `(native) ${native ?? frames[0] ?? '?'}`);
    let map = byProc.get(kind);
    if (!map) {
      map = new Map();
      byProc.set(kind, map);
    }
    map.set(key, (map.get(key) ?? 0) + 1);
  }
  console.log(
    `${RUNS} runs of ${CALLS} sequential calls, ${((wallMs * 1000) / calls).toFixed(0)} µs a call (wall, perf on); load ${process.env.LOAD ?? ''}`,
  );
  console.log('µs a call on a CPU, by thread:');
  for (const [t, n] of [...threads].sort((x, y) => y[1] - x[1])) console.log(`${us(n)}  ${t}`);
  for (const [kind, map] of byProc) {
    const total = [...map.values()].reduce((x, y) => x + y, 0);
    console.log(
      `=== ${kind}: ${us(total)} µs a call, by ${NATIVE ? 'innermost native' : 'innermost JS'} frame`,
    );
    for (const [k, n] of [...map].sort((x, y) => y[1] - x[1]).slice(0, TOP))
      console.log(`${us(n)}  ${k.slice(0, 150)}`);
  }
} finally {
  await cluster.stop();
  app.close();
}
