/**
 * round 47 `live-check-on` (2): how long a LIVE worker's registration stands while its pop is not
 * blocked in Redis — the only time a hand-off's answer can wait on a live worker's key, so the floor
 * under the gateway's take-back delay (gateway handoff-reclaim-store.ts `HAND_OFF_RECLAIM_MS`): a
 * take-back sooner than that window's tail would take a job back from a live worker (no loss, no
 * duplicate: whoever removes the answer owns the job; a wasted hand-off, a false count on
 * `islet_handoff_reclaims_total` and a `handed job taken back` warning).
 * A devstack (one gateway, RUNNERS read-only runners, concurrency 4 each) under CLIENTS clients
 * submitting trivial waited runs for SECONDS, everything Redis executes read by MONITOR. A worker
 * sends its registration with its blocking pop on its own hand-off key (BZPOPMIN, timeout T), and
 * after a pop that brought no hand-off (its timeout, or the queue's marker) its take-back (EVAL of
 * TAKE_BACK on the same key); between the pop's return and that EVAL the registration stands with
 * no pop blocked. Per worker key it prints: after a timed-out pop, δ = EVAL − pop − T (the window
 * itself); and every hand-off push that landed inside such a window (after the key's latest pop,
 * before its take-back): its age when the worker's take-back took it. Counts and a distribution, not
 * a time claim. `LIVE=off|on`: the gateway's liveness check (default: the config's, on).
 * `REFUSE=off|on`: the runners' ISLET_HANDOFF_REFUSE_ON_MARKER (round 48 `pop-registration`).
 * Round 49 `fetch-takeback`: a take-back the worker's fetch carries counts as one (its EVALSHA).
 * Usage: [CLIENTS=6] [SECONDS=60] [RUNNERS=2] [LIVE=on] [REFUSE=off] node test/bench/takeback-window.ts
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';

const CLIENTS = Number(process.env.CLIENTS ?? 6);
const SECONDS = Number(process.env.SECONDS ?? 60);
const RUNNERS = Number(process.env.RUNNERS ?? 2);
const c = await startCluster({
  gateways: 1,
  runners: Array.from({ length: RUNNERS }, () => ({ modes: ['read-only' as const] })),
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.LIVE ? { ISLET_HANDOFF_LIVE_CHECK: process.env.LIVE } : {}),
    // round 48 `pop-registration`: the runners' refusal of a registration while the marker stands.
    ...(process.env.REFUSE ? { ISLET_HANDOFF_REFUSE_ON_MARKER: process.env.REFUSE } : {}),
  },
});
const watcher = createRedis(c.redisUrl);
const redis = createRedis(c.redisUrl);
const sec = (t: string) => Number(t) * 1000;
const pops = new Map<
  string,
  { at: number; timeoutMs: number; pushAt?: number; before?: string; score?: string; marker?: string }
>();
/**
 * round 48 `pop-registration`: what served a pop whose key then got a push before its take-back —
 * the first marker write after the pop ('handing submit': the marker a hand-off's script set when it
 * left jobs behind, its own push just before it; 'other script'; none: a timeout).
 */
const servedBy = new Map<string, number>();
let markerWrites = 0;
/** Registrations a worker's script wrote (ZADD idle), beside its pops: the rest were refused. */
let registrationsWritten = 0;
/** The latest commands scripts ran (what a push followed, for the samples printed). */
const recent: string[] = [];
const samples: string[] = [];
const deltas: number[] = [];
const wakes: number[] = [];
const ages: number[] = [];
let popsSeen = 0;
let pushes = 0;
let numsub = 0;
let takeBacks = 0;
/** Take-backs carried by the worker's fused fetch (round 49 `fetch-takeback`), of `takeBacks`. */
let fusedTakeBacks = 0;
const monitor = await watcher.monitor();
monitor.on('monitor', (time: string, args: string[], source: string) => {
  const cmd = args[0]?.toLowerCase();
  if (source === 'lua' && cmd === 'pubsub') numsub++;
  if (source === 'lua') {
    recent.push(
      `${cmd} ${(args[1] ?? '').replace(/^islet:\{runs-read-only\}:/, '')} ${cmd === 'zadd' ? args[2] : ''}`,
    );
    if (recent.length > 12) recent.shift();
  }
  if (source === 'lua' && cmd === 'zadd' && /:marker$/.test(args[1] ?? '')) {
    markerWrites++;
    // Ids and times out, so alike scripts count together.
    const ctx = recent
      .slice(-3, -1)
      .join(' | ')
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>')
      .replace(/\d{6,}/g, '<n>');
    const kind = /zadd handoff:/.test(ctx) ? 'handing submit (its push just before)' : `other script: ${ctx}`;
    for (const p of pops.values()) if (p.marker === undefined && p.pushAt === undefined) p.marker = kind;
  }
  if (source === 'lua' && cmd === 'zadd' && /:idle$/.test(args[1] ?? '')) registrationsWritten++;
  if (cmd === 'bzpopmin' && /:handoff:[^:]+$/.test(args[1] ?? '')) {
    popsSeen++;
    pops.set(args[1] as string, { at: sec(time), timeoutMs: Number(args[args.length - 1]) * 1000 });
  } else if (source === 'lua' && cmd === 'zadd' && /:handoff:[^:]+$/.test(args[1] ?? '')) {
    pushes++;
    const p = pops.get(args[1] as string);
    if (p && p.pushAt === undefined) {
      p.pushAt = sec(time);
      p.before = recent.slice(-6).join(' | ');
      p.score = args[2];
    }
  } else if (
    (cmd === 'eval' && args.length === 7 && /:handoff:[^:]+$/.test(args[5] ?? '')) ||
    (fusedKey(cmd, args) !== undefined && source !== 'lua')
  ) {
    // TAKE_BACK (3 keys and the worker id; the registration's script has 2 arguments more), or
    // round 49 `fetch-takeback`: the fused fetch carrying it (its worker's hand-off key its one
    // carried key baked, its 14th unbaked)
    const key = cmd === 'eval' && args.length === 7 ? (args[5] as string) : (fusedKey(cmd, args) as string);
    if (key !== args[5]) fusedTakeBacks++;
    takeBacks++;
    const p = pops.get(key);
    if (!p) return;
    const t1 = sec(time);
    if (t1 - p.at >= p.timeoutMs) deltas.push(t1 - p.at - p.timeoutMs);
    else wakes.push(t1 - p.at);
    // A push after the pop and before this take-back: it landed while no pop was blocked (a pop
    // blocked takes it in the push's own turn, and its worker sends no take-back).
    if (p.pushAt !== undefined) {
      ages.push(t1 - p.pushAt);
      const kind = t1 - p.at >= p.timeoutMs ? 'timeout' : (p.marker ?? 'no marker write seen');
      servedBy.set(kind, (servedBy.get(kind) ?? 0) + 1);
      if (samples.length < 5)
        samples.push(`score ${p.score}; age ${(t1 - p.pushAt).toFixed(2)} ms; after: ${p.before}`);
    }
    pops.delete(key);
  }
});
/** The hand-off key a fused fetch's take-back carries (EVALSHA/EVAL, 1 key baked or 14 unbaked), else undefined. */
function fusedKey(cmd: string | undefined, args: string[]): string | undefined {
  if (cmd !== 'evalsha' && cmd !== 'eval') return undefined;
  const key = args[2] === '1' ? args[3] : args[2] === '14' ? args[16] : undefined;
  return key !== undefined && /:handoff:[^:]+$/.test(key) ? key : undefined;
}
/** Each submit's time to its answer (the waited run's), ms. */
const lat: number[] = [];
const submit = async (i: number) => {
  const t0 = performance.now();
  const res = await fetch(`${c.url}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.devKey}`, 'content-type': 'application/json', prefer: 'wait=30' },
    body: JSON.stringify({
      code: `return ${i}`,
      description: 'w',
      sessionId: 's',
      turnId: 't',
      callId: `c${i}`,
    }),
  });
  await res.text();
  lat.push(performance.now() - t0);
  return res.status;
};
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(p * s.length))] as number);
};
const fmt = (xs: number[]) =>
  `n ${xs.length}; p50 ${q(xs, 0.5).toFixed(2)} p90 ${q(xs, 0.9).toFixed(2)} p99 ${q(xs, 0.99).toFixed(2)} max ${Math.max(...xs).toFixed(2)} ms`;
try {
  await submit(0);
  // Redis's commands (scripts' own counted inside them) from here: a count per run beside the rest.
  await redis.config('RESETSTAT');
  const until = Date.now() + SECONDS * 1000;
  let runs = 0;
  let failed = 0;
  const load = (await import('node:os')).loadavg()[0];
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, k) => {
      for (let i = 0; Date.now() < until; i++) {
        if ((await submit(k * 1e6 + i)) === 200) runs++;
        else failed++;
      }
    }),
  );
  const stats = await redis.info('commandstats');
  const callsOf = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  let calls = 0;
  for (const m of stats.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g))
    if (m[1] !== 'monitor') calls += Number(m[2]);
  console.log(
    `Redis commands a run ${(calls / Math.max(1, runs)).toFixed(2)} (eval ${(callsOf('eval') / Math.max(1, runs)).toFixed(3)}, evalsha ${(callsOf('evalsha') / Math.max(1, runs)).toFixed(3)}, bzpopmin ${(callsOf('bzpopmin') / Math.max(1, runs)).toFixed(3)})`,
  );
  // Idle workers' pops time out too: a few more seconds unloaded.
  await new Promise((r) => setTimeout(r, 12_000));
  console.log(
    `check ${process.env.LIVE ?? 'default'}, refuse ${process.env.REFUSE ?? 'default'}; clients ${CLIENTS}, ${SECONDS} s, runners ${RUNNERS}; load at start ${load?.toFixed(2)}, end ${(await import('node:os')).loadavg()[0]?.toFixed(2)}; runs ${runs} (not 200: ${failed}); pops ${popsSeen}, hand-off pushes ${pushes} (PUBSUB NUMSUB in scripts ${numsub}), take-backs sent by workers ${takeBacks} (with the fetch ${fusedTakeBacks}); reclaims by the gateway ${await reclaims()}`,
  );
  console.log(`window after a timed-out pop (take-back EVAL − pop − timeout): ${fmt(deltas)}`);
  console.log(`take-back after a pop woken by the marker (EVAL − pop): ${fmt(wakes)}`);
  console.log(
    `hand-offs that landed in a live worker's window, their age when its take-back took them: ${ages.length ? fmt(ages) : 'n 0'}`,
  );
  for (const x of samples) console.log(`  sample: ${x}`);
  console.log(
    `registrations written ${registrationsWritten} of ${popsSeen} pops; hand-off pushes per run ${(pushes / Math.max(1, runs)).toFixed(3)}; marker writes by scripts ${markerWrites}; what served the pops of hand-offs taken back:`,
  );
  for (const [k, n] of [...servedBy].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  ${n}: ${k}`);
  // round 47 `handoff-order`: the rest of the pushes were taken by the pop they were pushed to.
  console.log(
    `hand-offs taken by the pop ${pushes - ages.length}, by a live worker's take-back ${ages.length} (${((100 * ages.length) / Math.max(1, pushes)).toFixed(1)} %); submit → answer ${fmt(lat.slice(1))}`,
  );
} finally {
  monitor.disconnect();
  watcher.disconnect();
  redis.disconnect();
  await c.stop();
}

async function reclaims(): Promise<string> {
  const text = await (await fetch(`${c.url}/metrics`)).text();
  return (
    text
      .split('\n')
      .filter((l) => l.startsWith('islet_handoff_reclaims_total{'))
      .map((l) => l.slice(l.indexOf('mode=')))
      .join(', ') || '0 (no series)'
  );
}
