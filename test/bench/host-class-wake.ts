/**
 * Does a sandbox host's scheduling class reach a thread of another process woken onto its CPU?
 * (round 45, `host-nice`). A "host" (a node process that spins BURST_US then sleeps GAP_US, like a
 * host making its next isolate) and a "woken" process (a node process blocked reading a pipe, like
 * Redis waiting for its fsync or the runner for its hand-off) are both pinned to CPU 1; this process,
 * on CPU 0, writes its CLOCK_MONOTONIC time into the pipe every 2–4 ms and the woken process reports
 * how late it read it (µs). Each setting varies the host's class (none, nice 10, nice 19, SCHED_IDLE, a 0.1 ms
 * EEVDF slice via test/bench/sched-slice.c) and whether the woken process shares the host's
 * scheduling group (same session: one autogroup here; `setsid`: a group of its own, as every
 * devstack/bench process spawned `detached` is, and as another pod's processes are under cgroups).
 *
 *   flock /work/wt/bench.lock bash scripts/toolchain.sh node test/bench/host-class-wake.ts
 *   SAMPLES=400 ROUNDS=2 BURST_US=1500 GAP_US=2000 …
 * Needs taskset, chrt, renice, setsid; /tmp/sched-slice (gcc -O2 -o /tmp/sched-slice
 * test/bench/sched-slice.c) for the slice rows (skipped without it).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const SAMPLES = Number(process.env.SAMPLES ?? 400);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const BURST_US = Number(process.env.BURST_US ?? 1500);
const GAP_US = Number(process.env.GAP_US ?? 2000);
const SLICE_TOOL = process.env.SLICE_TOOL ?? '/tmp/sched-slice';

const HOST_JS = `const s=new Int32Array(new SharedArrayBuffer(4));const now=()=>Number(process.hrtime.bigint())/1e3;
for(;;){const e=now()+${BURST_US};while(now()<e){}Atomics.wait(s,0,0,${GAP_US / 1000});}`;
const WOKEN_JS = `const out=[];let buf='';process.stdin.on('data',(d)=>{const at=Number(process.hrtime.bigint());buf+=d;
let i;while((i=buf.indexOf('\\n'))>=0){const l=buf.slice(0,i);buf=buf.slice(i+1);if(l==='end'){process.stdout.write(JSON.stringify(out));process.exit(0);}out.push((at-Number(l))/1e3);}});`;

type Class = 'none' | 'normal' | 'nice10' | 'nice19' | 'idle' | 'slice';
const settings: { host: Class; group: 'same' | 'other' }[] = [];
for (const group of ['same', 'other'] as const)
  for (const host of ['none', 'normal', 'nice10', 'nice19', 'idle', 'slice'] as const)
    if (host !== 'slice' || existsSync(SLICE_TOOL)) settings.push({ host, group });

execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

function startHost(cls: Class): ChildProcess | undefined {
  if (cls === 'none') return undefined;
  const pre =
    cls === 'idle' ? ['chrt', '-i', '0'] : cls.startsWith('nice') ? ['nice', '-n', cls.slice(4)] : [];
  const argv = [...pre, 'taskset', '-c', '1', process.execPath, '-e', HOST_JS];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
  if (cls === 'slice') setTimeout(() => execFileSync(SLICE_TOOL, ['100000', String(child.pid)]), 100);
  return child;
}

async function measure(cls: Class, group: 'same' | 'other'): Promise<number[]> {
  const host = startHost(cls);
  const woken = spawn('taskset', ['-c', '1', process.execPath, '-e', WOKEN_JS], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: group === 'other',
  });
  let text = '';
  woken.stdout!.on('data', (d) => {
    text += d;
  });
  const done = new Promise((r) => woken.once('exit', r));
  await new Promise((r) => setTimeout(r, 400));
  for (let i = 0; i < SAMPLES; i++) {
    await new Promise((r) => setTimeout(r, 2 + Math.random() * 2));
    woken.stdin!.write(`${process.hrtime.bigint()}\n`);
  }
  woken.stdin!.write('end\n');
  await done;
  host?.kill('SIGKILL');
  return JSON.parse(text) as number[];
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const rows: string[] = [];
for (let r = 0; r < ROUNDS; r++)
  for (const s of r % 2 ? [...settings].reverse() : settings) {
    const xs = (await measure(s.host, s.group)).sort((a, b) => a - b);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const over = (t: number) => xs.filter((x) => x > t).length;
    rows.push(
      `| ${r + 1} | ${s.group} | ${s.host} | ${pct(xs, 50).toFixed(0)} | ${pct(xs, 90).toFixed(0)} | ${pct(xs, 99).toFixed(0)} | ${mean.toFixed(0)} | ${over(250)} / ${over(1000)} |`,
    );
    console.log(rows.at(-1));
  }
console.log(
  `\nwoken process's read lateness, µs (${SAMPLES} wakes a row; host bursts ${BURST_US} µs, gaps ${GAP_US} µs)\n| round | group of the woken | host's class | p50 | p90 | p99 | mean | wakes > 250 / > 1000 µs |\n|---|---|---|---|---|---|---|---|\n${rows.join('\n')}`,
);
