/**
 * `node test/bench/script-replay.ts`: Redis's own time for a sequential trivial run's two scripts
 * (the submit's admission + add + hand-off; the runner's fused end + completion), each replayed hot
 * on a private redis-server (no AOF, nothing else connected) from the very state it met live. A
 * local cluster (default settings, the rate limit lifted) runs `WARM` runs (default 60); then,
 * with its runner idle, every key is dumped, the script cache flushed (so the next run's scripts
 * come as EVAL with their source) and one run is recorded by MONITOR. On the private server the
 * dump is restored and the recorded commands replayed up to each script; each script is then run
 * `N` times (default 2000) by EVALSHA, the keys it changed restored after each call, in `ROUNDS`
 * (default 5) alternating phases. Per call: `INFO commandstats` usec of EVALSHA (the commands
 * inside included) and the server's main thread's time on a CPU (`/proc/<pid>/schedstat`, the
 * restores' commands included: printed as measured, for comparing two sides), then each inner
 * command's µs (SLOWLOG at 0, one phase apart: logging adds its own time). The registration in
 * the idle set is given a live expiry at each restore (the recording is older than its 6 s).
 * A/B through `test/bench/ab.sh`: each side records and replays its own scripts. `DEFERRED=1`: the
 * queue holds a deferred job (a delayed one, due in an hour) when the run is recorded.
 */

import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { freePort, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { childPidWith } from './baselines.ts';
import { trivialRun } from './cluster-figures.ts';

const WARM = Number(process.env.WARM ?? 60);
const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

/** One MONITOR line's arguments (Redis's `sdscatrepr` escapes undone) and whether Lua sent it. */
function parseMonitor(line: string): { lua: boolean; args: Buffer[] } | undefined {
  const close = line.indexOf('] ');
  if (close < 0) return undefined;
  const lua = line.slice(line.indexOf('[') + 1, close).endsWith('lua');
  const args: Buffer[] = [];
  let i = close + 2;
  while (i < line.length) {
    if (line[i] !== '"') {
      i++;
      continue;
    }
    i++;
    const bytes: number[] = [];
    while (i < line.length && line[i] !== '"') {
      const c = line[i]!;
      if (c === '\\') {
        const n = line[i + 1]!;
        const simple: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, '\\': 92, '"': 34 };
        if (n === 'x') {
          bytes.push(Number.parseInt(line.slice(i + 2, i + 4), 16));
          i += 4;
        } else {
          bytes.push(simple[n] ?? n.charCodeAt(0));
          i += 2;
        }
      } else {
        bytes.push(...Buffer.from(c, 'latin1'));
        i++;
      }
    }
    args.push(Buffer.from(bytes));
    i++;
  }
  return { lua, args };
}

async function dumpAll(redis: Redis): Promise<Map<string, Buffer>> {
  const names = await redis.keys('*');
  const pipe = redis.pipeline();
  for (const k of names) pipe.dumpBuffer(k);
  const got = (await pipe.exec()) ?? [];
  const out = new Map<string, Buffer>();
  names.forEach((k, i) => {
    const v = got[i]?.[1];
    if (Buffer.isBuffer(v)) out.set(k, v);
  });
  return out;
}

// 1. Record one run live.
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000', ...JSON.parse(process.env.BENCH_ENV ?? '{}') },
});
let before: Map<string, Buffer>;
const recorded: Buffer[][] = [];
const inner = new Map<number, string[]>();
/** Whatever the scripts' own commands named: the keys a replay may change. */
const innerKeys = new Set<string>();
try {
  const once = trivialRun(cluster, 'Replay a trivial program', { tenantApps: true });
  for (let i = 0; i < WARM; i++) await once();
  const admin = createRedis(cluster.redisUrl);
  await new Promise((r) => setTimeout(r, 200));
  // `DEFERRED=1`: the queue holds a job the fair share deferred (in the delayed set, due in an
  // hour), as two tenants leave it: the recorded submit and end meet a queue with a delayed job.
  if (process.env.DEFERRED) {
    const q = 'islet:{runs-read-only}:';
    const due = BigInt(Date.now() + 3_600_000) * 4096n + 1n;
    await admin.hset(`${q}deferred-1`, {
      name: 'run',
      data: '{}',
      opts: '{}',
      timestamp: String(Date.now()),
      delay: '3600000',
      priority: '0',
    });
    await admin.zadd(`${q}delayed`, String(due), 'deferred-1');
  }
  await admin.script('FLUSH');
  before = await dumpAll(admin);
  const url = new URL(cluster.redisUrl);
  const sock = createConnection(Number(url.port), url.hostname);
  let text = '';
  const lines: string[] = [];
  sock.on('data', (d) => {
    text += d.toString('latin1');
    let at = text.indexOf('\r\n');
    while (at >= 0) {
      lines.push(text.slice(0, at));
      text = text.slice(at + 2);
      at = text.indexOf('\r\n');
    }
  });
  sock.write('MONITOR\r\n');
  await new Promise((r) => setTimeout(r, 50));
  await once();
  await new Promise((r) => setTimeout(r, 100));
  sock.destroy();
  admin.disconnect();
  const loaded = new Set<string>();
  for (const line of lines) {
    const m = parseMonitor(line);
    if (!m || m.args.length === 0) continue;
    const cmd = m.args[0]!.toString().toLowerCase();
    if (m.lua) {
      inner.get(recorded.length - 1)?.push(cmd);
      // Every argument that may be a key (extra names are harmless: they are restored as they were).
      for (const a of m.args.slice(1)) if (a.length < 200) innerKeys.add(a.toString('latin1'));
    } else if (cmd === 'evalsha' && !loaded.has(m.args[1]!.toString())) {
      // After the flush an EVALSHA of a script not sent in full yet fails (NOSCRIPT): its EVAL follows.
    } else {
      if (cmd === 'eval') loaded.add(createHash('sha1').update(m.args[1]!).digest('hex'));
      recorded.push(m.args);
      inner.set(recorded.length - 1, []);
    }
  }
} finally {
  await cluster.stop();
}

const name = (c: Buffer[]) => c[0]!.toString().toLowerCase();
const key = (c: Buffer[], i: number) => c[3 + i]?.toString() ?? '';
const isScript = (c: Buffer[]) => name(c) === 'eval' || name(c) === 'evalsha';
const submitAt = recorded.findIndex((c) => isScript(c) && key(c, 0).endsWith(':inflight'));
// The end: BullMQ's completion's keys first (a fetch, e.g. the worker's after a delayed job, has 11).
// Since round 46 `end-names` the end's queue names are in its text: its first keys are the job's and the run's.
// Since round 47 `end-keys` its run and tenant keys are too: 3 keys, the tenant's usage counter first.
const endAt = recorded.findIndex(
  (c, i) =>
    isScript(c) &&
    ((Number(key(c, -1)) > 14 &&
      ((key(c, 0).endsWith(':wait') && key(c, 1).endsWith(':active')) ||
        (i > submitAt && key(c, 1).startsWith('islet:run:')))) ||
      (i > submitAt && key(c, -1) === '3' && key(c, 0).includes(':usage:'))),
);
if (process.env.CALLS_SHOWN)
  for (const [i, c] of recorded.entries())
    console.log(
      `#${i} ${name(c)} ${isScript(c) ? `${key(c, -1)} ${key(c, 0)} ${key(c, 1)}` : c.slice(1, 3).join(' ')} (${inner.get(i)?.length} inside: ${inner.get(i)?.join(' ')})`,
    );
if (submitAt < 0 || endAt < submitAt)
  throw new Error(`no submit / end recorded: ${recorded.map(name).join(' ')}`);
const handedOff = inner.get(submitAt)?.filter((n) => n === 'zadd').length;
console.log(
  `recorded ${recorded.length} calls; submit #${submitAt} (${inner.get(submitAt)?.length} inside, hand-off ${handedOff ? 'yes' : 'NO'}), end #${endAt} (${inner.get(endAt)?.length} inside)`,
);

// 2. Replay on a private server.
/**
 * `REDIS_BIN`: another redis-server binary for the replay (e.g. one built with symbols, for
 * `PERF=1`: `perf record -g` of the replaying server over the measured rounds, to `PERF_OUT`).
 */
const server = process.env.REDIS_BIN
  ? await ownRedis(process.env.REDIS_BIN)
  : await startRedis({ appendOnly: false });
// A server of our own (`REDIS_BIN`, exec'd by a wrapper or not) keeps its child's pid.
const pid = 'pid' in server && server.pid ? String(server.pid) : childPidWith(`:${server.port}`);
const perf =
  process.env.PERF && pid
    ? spawn(
        'perf',
        [
          'record',
          '-F',
          '2999',
          '-g',
          '-p',
          pid,
          '-o',
          process.env.PERF_OUT ?? '/tmp/script-replay.perf.data',
        ],
        {
          stdio: 'ignore',
        },
      )
    : undefined;
const onCpu = () => (pid ? Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) : Number.NaN);
const r = new Redis(server.url);
/** Restores, dumps and stats go on their own connection: SLOWLOG tells them apart by address. */
const w = new Redis(server.url);
/** Subscribed to each registered worker's hand-off channel (`load`). */
const live = new Redis(server.url);
const restorer = await (async () => {
  const list = (await w.client('LIST')) as string;
  const mine = /id=(\d+) addr=(\S+)/g;
  const id = String(await w.client('ID'));
  for (const m of list.matchAll(mine)) if (m[1] === id) return m[2];
  return '';
})();
try {
  await w.config('SET', 'save', '');
  /** The idle registrations of the state last loaded (given a live expiry at every restore). */
  let idle: [string, string][] = [];
  const liveIdle = (pipe: ReturnType<Redis['pipeline']>) => {
    for (const [k, m] of idle) pipe.zadd(k, Date.now() + 3_600_000, m);
  };
  const load = async (state: Map<string, Buffer>) => {
    await w.flushall();
    const pipe = w.pipeline();
    for (const [k, v] of state) pipe.restore(k, 0, v, 'REPLACE');
    await pipe.exec();
    idle = [];
    for (const k of await w.keys('*:idle')) for (const m of await w.zrange(k, 0, -1)) idle.push([k, m]);
    // The hand-off's liveness check (on by default since round 47 `live-check-on`) hands a job only
    // to a worker subscribed to its hand-off key's channel (handoff-live.ts): held here for each
    // registration, as its live runner holds it.
    const channels = idle.map(([k, m]) => `${k.slice(0, -'idle'.length)}handoff:${m}`);
    if (channels.length > 0) await live.subscribe(...channels);
    const fix = w.pipeline();
    liveIdle(fix);
    await fix.exec();
  };
  /** A recorded script as EVALSHA (its source loaded). */
  const asSha = async (c: Buffer[]) => {
    if (name(c) === 'evalsha') return c;
    const sha = (await w.script('LOAD', c[1]!)) as string;
    return [Buffer.from(sha), ...c.slice(2)];
  };
  const evalsha = (c: Buffer[]) => r.callBuffer('evalsha', ...c);
  const send = (c: Buffer[]) => r.callBuffer(c[0]!.toString(), ...c.slice(1));
  await load(before);
  for (let i = 0; i < submitAt; i++) await send(recorded[i]!).catch(() => undefined);
  const preSubmit = await dumpAll(w);
  // `UNHANDED=1`: the submit replayed with no runner registered idle (the idle set and its terms
  // left out of its state): the queued submit's script, BullMQ's add and the admission alone.
  if (process.env.UNHANDED)
    for (const k of [...preSubmit.keys()])
      if (k.endsWith(':idle') || k.endsWith(':idle:args')) preSubmit.delete(k);
  const submit = await asSha(recorded[submitAt]!);
  // The registration's terms the submit reads (SOURCES_TO: terms.txt, one a line, as stored).
  const termsRead = process.env.SOURCES_TO
    ? await Promise.all((await w.keys('*:idle:args')).map((k) => w.hvalsBuffer(k)))
    : [];
  await evalsha(submit);
  if (process.env.SOURCES_TO) {
    writeFileSync(
      `${process.env.SOURCES_TO}/terms.txt`,
      Buffer.concat(termsRead.flat().map((b) => Buffer.concat([b, Buffer.from('\n')]))),
    );
    // The member the submit handed (the answer packed), as stored.
    const handed = await Promise.all((await w.keys('*:handoff:*')).map((k) => w.zrangeBuffer(k, 0, -1)));
    writeFileSync(`${process.env.SOURCES_TO}/handed.bin`, Buffer.concat(handed.flat()));
  }
  for (let i = submitAt + 1; i < endAt; i++) {
    const c = recorded[i]!;
    if (isScript(c)) await evalsha(await asSha(c));
    else await send(c);
  }
  const preEnd = await dumpAll(w);
  const end = await asSha(recorded[endAt]!);
  if (process.env.SOURCES_TO) {
    writeFileSync(`${process.env.SOURCES_TO}/submit.lua`, recorded[submitAt]![1]!);
    writeFileSync(`${process.env.SOURCES_TO}/end.lua`, recorded[endAt]![1]!);
    // The submit's and the end's keys and arguments (after the sha), one a line, for reading what a call sends.
    writeFileSync(
      `${process.env.SOURCES_TO}/submit-args.txt`,
      submit
        .slice(1)
        .map((b) => JSON.stringify(b.toString('latin1')))
        .join('\n'),
    );
    writeFileSync(
      `${process.env.SOURCES_TO}/end-args.txt`,
      end
        .slice(1)
        .map((b) => JSON.stringify(b.toString('latin1')))
        .join('\n'),
    );
  }
  /**
   * `PATCH_SUBMIT` / `PATCH_END` (JSON: [[find, replace], …], each find's every occurrence): a
   * variant of that script, measured beside it in the same rounds (what a part costs).
   */
  const variant = async (label: string, base: Buffer[], patch: string | undefined) => {
    if (!patch) return undefined;
    let source = recorded[label === 'submit' ? submitAt : endAt]![1]!.toString('latin1');
    for (const [find, replace] of JSON.parse(patch) as [string, string][]) {
      if (!source.includes(find)) throw new Error(`${label} patch: not found: ${find}`);
      source = source.split(find).join(replace);
    }
    const sha = (await w.script('LOAD', Buffer.from(source, 'latin1'))) as string;
    return [Buffer.from(sha), ...base.slice(1)];
  };
  const submitPatched = await variant('submit', submit, process.env.PATCH_SUBMIT);
  const endPatched = await variant('end', end, process.env.PATCH_END);

  /** Keys a call may change from `state` (restored after each call): those the recorded scripts named. */
  const touched = async (state: Map<string, Buffer>, call: Buffer[]) => {
    await load(state);
    await evalsha(call);
    const after = new Set(await w.keys('*'));
    return [...new Set([...state.keys(), ...after])].filter((k) => innerKeys.has(k) || !state.has(k));
  };
  const restore = async (state: Map<string, Buffer>, changed: string[]) => {
    const pipe = w.pipeline();
    for (const k of changed) {
      const v = state.get(k);
      if (v) pipe.restore(k, 0, v, 'REPLACE');
      else pipe.del(k);
    }
    liveIdle(pipe);
    await pipe.exec();
  };
  const stats = async () => {
    const t = await w.info('commandstats');
    const m = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(t);
    return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
  };
  /**
   * `CALLGRIND=1` (with `REDIS_BIN` a wrapper running redis-server under `valgrind
   * --tool=callgrind --toggle-collect=evalGenericCommand`): instructions a script call, read with
   * `callgrind_control -e` around each phase (only the scripts' calls are collected, not the
   * restores): a count no load moves, for comparing variants of a script.
   */
  const instructions = () => {
    if (!process.env.CALLGRIND || !pid) return Number.NaN;
    const out = execFileSync('callgrind_control', ['-e', pid], { encoding: 'utf8' });
    const m = /Th 1\s+([\d,]+)/.exec(out);
    return m ? Number(m[1]!.replaceAll(',', '')) : Number.NaN;
  };
  const phase = async (state: Map<string, Buffer>, call: Buffer[], changed: string[], n: number) => {
    await load(state);
    const s0 = await stats();
    const c0 = onCpu();
    const i0 = instructions();
    for (let i = 0; i < n; i++) {
      await evalsha(call);
      await restore(state, changed);
    }
    const i1 = instructions();
    const s1 = await stats();
    return {
      us: (s1.usec - s0.usec) / (s1.calls - s0.calls),
      cpu: (onCpu() - c0) / 1000 / n,
      ir: (i1 - i0) / n,
    };
  };
  const sides = [
    { label: 'submit', state: preSubmit, call: submit, changed: await touched(preSubmit, submit) },
    { label: 'end', state: preEnd, call: end, changed: await touched(preEnd, end) },
  ];
  if (submitPatched)
    sides.push({
      label: 'submit patched',
      state: preSubmit,
      call: submitPatched,
      changed: await touched(preSubmit, submitPatched),
    });
  if (endPatched)
    sides.push({
      label: 'end patched',
      state: preEnd,
      call: endPatched,
      changed: await touched(preEnd, endPatched),
    });
  // `PATCH_ENDS` (JSON: a list of PATCH_END's patches): several variants of the end in the same
  // rounds, e.g. the script cut short at successive points (what each part costs). An entry may
  // also be `{"patch": […], "drop": [k, n]}`: the call then goes without the n arguments that end
  // k before its last (`[1, 24]`: the fused end's 24 start arguments, before its deferral).
  for (const [i, entry] of (JSON.parse(process.env.PATCH_ENDS ?? '[]') as unknown[]).entries()) {
    const { patch, drop } = Array.isArray(entry)
      ? { patch: entry, drop: undefined }
      : (entry as { patch: unknown[]; drop?: [number, number] });
    let call = (await variant('end', end, JSON.stringify(patch)))!;
    if (drop) {
      const [k, n] = drop;
      call = [...call.slice(0, call.length - k - n), ...call.slice(call.length - k)];
    }
    sides.push({ label: `end patched ${i + 1}`, state: preEnd, call, changed: await touched(preEnd, call) });
  }
  // `PATCH_SUBMITS` (JSON: a list of PATCH_SUBMIT's patches): several variants of the submit in the
  // same rounds (with `CALLGRIND=1`: what each costs in instructions).
  for (const [i, patch] of (JSON.parse(process.env.PATCH_SUBMITS ?? '[]') as unknown[]).entries()) {
    const call = (await variant('submit', submit, JSON.stringify(patch)))!;
    sides.push({
      label: `submit patched ${i + 1}`,
      state: preSubmit,
      call,
      changed: await touched(preSubmit, call),
    });
  }
  // `ONLY` (a label, e.g. `submit`): only that side measured (a callgrind file of one script's calls).
  if (process.env.ONLY) sides.splice(0, sides.length, ...sides.filter((s) => s.label === process.env.ONLY));
  for (const s of sides)
    console.log(
      `${s.label}: ${s.changed.length} keys restored after each call${process.env.KEYS_SHOWN ? `: ${s.changed.join(' ')}` : ''}`,
    );
  const got = new Map<string, { us: number[]; cpu: number[]; ir: number[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of round % 2 ? [...sides].reverse() : sides) {
      const p = await phase(s.state, s.call, s.changed, N);
      const g = got.get(s.label) ?? { us: [], cpu: [], ir: [] };
      g.us.push(p.us);
      g.cpu.push(p.cpu);
      g.ir.push(p.ir);
      got.set(s.label, g);
    }
  }
  if (perf) {
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [label, g] of got)
    console.log(
      `${label}: usec a call median ${med(g.us).toFixed(2)} (min ${Math.min(...g.us).toFixed(2)}; ${g.us.map((x) => x.toFixed(1)).join(' ')}); server CPU a call with its restores ${med(g.cpu).toFixed(1)} µs${process.env.CALLGRIND ? `; instructions a call ${g.ir.map((x) => x.toFixed(0)).join(' ')}` : ''}`,
    );
  // `STAMPS=1` with PATCH_SUBMIT: the patched submit's own stamps (its `__stamps` list, each entry
  // `<label>:<TIME's µs>`, read and removed after each call), one phase of N calls: each step's µs
  // from the stamp before it (TIME's µs resolution: read as a mean over N; a TIME call ~1 µs).
  const stamped = sides.find((s) => s.label === 'submit patched');
  if (process.env.STAMPS && stamped) {
    const steps = new Map<string, number[]>();
    await load(stamped.state);
    for (let i = 0; i < N; i++) {
      await evalsha(stamped.call);
      const list = await w.lrange('__stamps', 0, -1);
      await w.del('__stamps');
      await restore(stamped.state, stamped.changed);
      let prev: number | undefined;
      let prevLabel = '';
      for (const e of list) {
        const at = e.lastIndexOf(':');
        const label = e.slice(0, at);
        const us = Number(e.slice(at + 1));
        if (prev !== undefined) {
          const d = (us - prev + 1_000_000) % 1_000_000;
          const k = `${prevLabel} → ${label}`;
          const xs = steps.get(k) ?? [];
          xs.push(d);
          steps.set(k, xs);
        }
        prev = us;
        prevLabel = label;
      }
    }
    console.log(`submit patched, its stamps over ${N} calls (µs: mean, p50):`);
    for (const [k, xs] of steps) {
      const sorted = [...xs].sort((a, b) => a - b);
      const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
      console.log(
        `  ${k.padEnd(40)} ${mean.toFixed(1).padStart(7)} ${String(sorted[Math.floor(xs.length / 2)]).padStart(5)} [${xs.length}]`,
      );
    }
  }
  // Each inner command's time, from SLOWLOG at 0 (one phase of each; logging adds its own time).
  for (const s of process.env.CALLGRIND ? [] : sides) {
    await w.config('SET', 'slowlog-log-slower-than', '0');
    await w.config('SET', 'slowlog-max-len', '1000000');
    const n = Math.min(N, 500);
    await load(s.state);
    await w.slowlog('RESET');
    for (let i = 0; i < n; i++) {
      await evalsha(s.call);
      await restore(s.state, s.changed);
    }
    await w.config('SET', 'slowlog-log-slower-than', '10000');
    const log = (await w.slowlog('GET', 1_000_000)) as [number, number, number, string[], string, string][];
    const rows = new Map<string, { calls: number; us: number }>();
    let scriptUs = 0;
    // Only the replaying connection's commands: the script and what it ran (the restores go on `w`).
    for (const [, , us, args, addr] of log) {
      if (addr === restorer) continue;
      const cmd = String(args[0]).toLowerCase();
      if (cmd === 'evalsha') {
        scriptUs += us;
        continue;
      }
      const rr = rows.get(cmd) ?? { calls: 0, us: 0 };
      rr.calls++;
      rr.us += us;
      rows.set(cmd, rr);
    }
    console.log(
      `${s.label} with SLOWLOG: ${(scriptUs / n).toFixed(1)} µs a call; inner commands, µs a call (count):`,
    );
    console.log(
      [...rows]
        .sort((a, b) => b[1].us - a[1].us)
        .map(([k, v]) => `${k} ${(v.us / n).toFixed(2)} (${(v.calls / n).toFixed(1)})`)
        .join(', '),
    );
  }
} finally {
  r.disconnect();
  w.disconnect();
  live.disconnect();
  await server.stop();
}
process.exit(0);

async function ownRedis(
  bin: string,
): Promise<{ port: number; url: string; pid: number | undefined; stop: () => Promise<void> }> {
  const port = await freePort();
  const proc = spawn(
    bin,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--latency-tracking',
      'no',
    ],
    {
      stdio: 'ignore',
    },
  );
  for (let i = 0; i < 100; i++) {
    const up = await new Redis(port, { lazyConnect: true, maxRetriesPerRequest: 0 }).connect().then(
      () => true,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: proc.pid,
    // SIGTERM, awaited: a server under valgrind (REDIS_BIN a wrapper) writes its counts at exit.
    stop: async () => {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
