/**
 * `node test/bench/redis-cpu.ts`: where redis-server's CPU per trivial run goes, at 16 clients
 * (`CLIENTS`) on a local cluster (as `cpu-split.ts`: 96 runs first, then `RUNS`, default 600).
 * Per run: Redis's user and system CPU (/proc), its time inside commands by `INFO commandstats`
 * (a script's EVALSHA usec includes the commands it runs; those are listed apart and not added
 * twice), reads and writes of client sockets (`INFO stats`), bytes in and out, AOF bytes,
 * context switches; then the same for an idle window as long (the cluster's own polling, up to
 * 10 s). `SYSCALLS=1` counts fdatasync, write, writev, read and epoll_wait (one a loop turn) by
 * tracepoint (`perf stat`, cheap enough not to change how Redis batches). `PERF=1` records `perf record -g` of redis-server over the window (file
 * in `PERF_OUT`, default /tmp/redis-cpu.perf.data) and prints the top symbols; `STRACE=1` counts
 * its syscalls (`strace -c -f`) instead: strace slows Redis, so its CPU figures are not comparable.
 * `PERF_GRAPH=dwarf,16384` unwinds Debian's redis-server (built without frame pointers) to read
 * inclusive shares (`perf report --children`).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { childPidWith } from './baselines.ts';
import { burst, trivialRun } from './cluster-figures.ts';

const TICKS_PER_SECOND = 100;
const RUNS = Number(process.env.RUNS ?? 600);
const CLIENTS = Number(process.env.CLIENTS ?? 16);
const PERF_OUT = process.env.PERF_OUT ?? '/tmp/redis-cpu.perf.data';

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.BENCH_ENV ? JSON.parse(process.env.BENCH_ENV) : {}),
  },
});
const redisPid = childPidWith('redis-server');
if (!redisPid) throw new Error('redis-server not found');
const admin = createRedis(cluster.redisUrl);
// `REDIS_CONFIG` ('{"latency-tracking":"no"}'): CONFIG SET before the runs, to try a setting.
for (const [k, v] of Object.entries(JSON.parse(process.env.REDIS_CONFIG ?? '{}') as Record<string, string>))
  await admin.config('SET', k, v);
// `LUA_GC` ('setpause=400,setstepmul=200'): the scripts' Lua VM's collector set before the runs
// (`collectgarbage`, as a script may call it), to weigh the collector's share of a run.
for (const part of (process.env.LUA_GC ?? '').split(',').filter(Boolean)) {
  const [opt, value] = part.split('=');
  console.log(
    `collectgarbage('${opt}', ${value}) was`,
    await admin.eval(`return collectgarbage('${opt}', ${Number(value)})`, 0),
  );
}

function cpu() {
  // All threads (bio threads fsync only under everysec; `always` fsyncs on the main thread).
  const f = readFileSync(`/proc/${redisPid}/stat`, 'utf8');
  const s = f.slice(f.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${redisPid}/status`, 'utf8');
  const ctx = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return {
    minflt: Number(s[7]),
    user: Number(s[11]),
    sys: Number(s[12]),
    vol: ctx('voluntary_ctxt_switches'),
    invol: ctx('nonvoluntary_ctxt_switches'),
  };
}

async function info() {
  const text = await admin.info('all');
  const out = new Map<string, number>();
  for (const line of text.split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) {
      out.set(`calls:${m[1]}`, Number(m[2]));
      out.set(`usec:${m[1]}`, Number(m[3]));
      continue;
    }
    const kv = /^([a-z_]+):(-?[\d.]+)$/.exec(line);
    if (kv) out.set(kv[1]!, Number(kv[2]));
  }
  return out;
}

const once = trivialRun(cluster, 'Redis CPU');
const load = (n: number) => burst(once, n, CLIENTS);

/** What changed over a window, per unit (a run, or a second idle). */
async function measure(work: () => Promise<void>) {
  const c0 = cpu();
  const i0 = await info();
  const t0 = performance.now();
  await work();
  const seconds = (performance.now() - t0) / 1000;
  const c1 = cpu();
  const i1 = await info();
  const d = (k: string) => (i1.get(k) ?? 0) - (i0.get(k) ?? 0);
  return { seconds, c0, c1, d, i1 };
}

function report(label: string, unit: 'run' | 's', per: number, m: Awaited<ReturnType<typeof measure>>) {
  const ms = (ticks: number) => ((ticks * 1000) / TICKS_PER_SECOND / per).toFixed(3);
  const { c0, c1, d } = m;
  const scripts = ['evalsha', 'eval', 'fcall'];
  const rows = [...m.i1.keys()]
    .filter((k) => k.startsWith('calls:'))
    .map((k) => k.slice(6))
    .map((n) => ({ n, calls: d(`calls:${n}`), usec: d(`usec:${n}`) }))
    .filter((r) => r.calls > 0);
  // A script's usec includes the commands it runs, which also count in their own rows.
  const scriptUsec = rows.filter((r) => scripts.includes(r.n)).reduce((s, r) => s + r.usec, 0);
  const f = (v: number, digits = 1) => (v / per).toFixed(digits);
  console.log(
    `${label}: CPU ms/${unit} user ${ms(c1.user - c0.user)} sys ${ms(c1.sys - c0.sys)}; ` +
      `scripts' usec/${unit} ${f(scriptUsec, 0)} (their commands included); commands ${f(d('total_commands_processed'))}, ` +
      `reads ${f(d('total_reads_processed'))}, writes ${f(d('total_writes_processed'))}, ` +
      `bytes in ${f(d('total_net_input_bytes'), 0)} out ${f(d('total_net_output_bytes'), 0)}, AOF ${f(d('aof_current_size'), 0)}, ` +
      `context switches ${f(c1.vol - c0.vol)} + ${f(c1.invol - c0.invol)} involuntary, minor faults ${f(c1.minflt - c0.minflt, 2)}`,
  );
  for (const r of rows.sort((a, b) => b.usec - a.usec).slice(0, Number(process.env.TOP ?? 12)))
    console.log(
      `  ${r.n.padEnd(16)} calls ${f(r.calls, 2).padStart(6)}  usec ${f(r.usec).padStart(7)}  (${(r.usec / r.calls).toFixed(2)} each)`,
    );
}

let tracer: ChildProcess | undefined;
try {
  await load(96);
  if (process.env.PERF === '1')
    tracer = spawn(
      'perf',
      [
        'record',
        '-F',
        process.env.PERF_HZ ?? '2999',
        '--call-graph',
        process.env.PERF_GRAPH ?? 'fp',
        '-o',
        PERF_OUT,
        '-p',
        redisPid,
      ],
      { stdio: 'ignore' },
    );
  else if (process.env.SYSCALLS === '1')
    // Syscall counts by tracepoint: cheap, so Redis batches as it does untraced.
    tracer = spawn(
      'perf',
      [
        'stat',
        '-e',
        ['fdatasync', 'write', 'read', 'epoll_wait', 'writev', 'pwrite64']
          .map((s) => `syscalls:sys_enter_${s}`)
          .join(','),
        '-p',
        redisPid,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  else if (process.env.STRACE === '1')
    tracer = spawn('strace', ['-c', '-f', '-p', redisPid], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (tracer) await new Promise((r) => setTimeout(r, 500));
  const busy = await measure(() => load(RUNS));
  if (tracer) {
    const done = new Promise((r) => tracer?.once('exit', r));
    tracer.kill('SIGINT');
    await done;
    tracer = undefined;
  }
  console.log(`${RUNS} runs in ${busy.seconds.toFixed(1)} s, redis pid ${redisPid}`);
  report('busy', 'run', RUNS, busy);
  console.log(
    `  Lua heap ${busy.i1.get('used_memory_lua')} B, cached scripts ${busy.i1.get('number_of_cached_scripts')}, keys ${busy.i1.get('db0') ?? (await admin.dbsize())}`,
  );
  const idleMs = Math.min(10_000, Math.round(busy.seconds * 1000));
  const idle = await measure(() => new Promise((r) => setTimeout(r, idleMs)));
  report(`idle ${idle.seconds.toFixed(1)} s`, 's', idle.seconds, idle);
  if (process.env.PERF === '1')
    console.log(
      execFileSync(
        'perf',
        [
          'report',
          '-i',
          PERF_OUT,
          '--no-children',
          '--sort',
          'dso,symbol',
          '--stdio',
          '-g',
          'none',
          '--percent-limit',
          '0.7',
        ],
        {
          encoding: 'utf8',
          maxBuffer: 1 << 26,
        },
      )
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .slice(0, 60)
        .join('\n'),
    );
} finally {
  tracer?.kill('SIGINT');
  admin.disconnect();
  await cluster.stop();
}
process.exit(0);
