/**
 * `node test/bench/slot-life.ts` (round 34, `slot-idle`): where the fair-share row's "idle slots
 * while runs wait" come from. The cluster as `bench:cluster` starts it (default settings: fair share
 * on, one server; 1 gateway, 1 runner of `BENCH_SLOTS` slots, default 4), 16 clients in windows of
 * `WINDOW_S` seconds (default 3), lone then two tenants, `CYCLES` (default 2) ABBA cycles. Each
 * side: runs/s; the pool sampler's idle slots while runs wait (`pool-sampler.ts`, every
 * `BENCH_FAIR_SAMPLE_MS`, default 25), as the row prints it; and, with the runner patched by
 * `test/bench/slot-life.patch` (it appends its sums to `ISLET_SLOT_TRACE`), the runner's own
 * integral of its slots by state over the same window: busy, reserved for a fetch in flight,
 * fetched but not taken, kept for a completion's next job not taken yet, reserved by an idle
 * registration, free (no one fetching, or a fetch waiting), and the runner's counts a run.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { TRIVIAL_RUN_BODY } from './baselines.ts';
import { leanPost } from './cluster-figures.ts';
import { poolLine, poolMeans, samplePool } from './pool-sampler.ts';

const SLOTS = Number(process.env.BENCH_SLOTS ?? 4);
const WINDOW_S = Number(process.env.WINDOW_S ?? 3);
const CYCLES = Number(process.env.CYCLES ?? 2);
const SAMPLE_MS = Number(process.env.BENCH_FAIR_SAMPLE_MS ?? 25);
const TRACE = `/tmp/slot-life-${process.pid}.jsonl`;
rmSync(TRACE, { force: true });

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: SLOTS }],
  env: {
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ISLET_SLOT_TRACE: TRACE,
    ...(process.env.BENCH_TENANT_SHARE ? { ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE } : {}),
  },
  logLevel: 'warn',
});

interface Line {
  wall: number;
  ms: Record<string, number>;
  counts: Record<string, number>;
  workers: Record<string, number>[];
  gaps: Record<string, { n: number; sumMs: number }>;
}
const lines = (): Line[] =>
  existsSync(TRACE)
    ? readFileSync(TRACE, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Line)
    : [];
/** The runner's sums as of a line written after now. */
async function traceNow(): Promise<Line | undefined> {
  const t = Date.now();
  for (let i = 0; i < 40; i++) {
    const last = lines().at(-1);
    if (last && last.wall >= t) return last;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

const sub = (a: Record<string, number>, b: Record<string, number>) => {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out[k] = (a[k] ?? 0) - (b[k] ?? 0);
  return out;
};
const workerSum = (l: Line) => {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(l.gaps ?? {})) {
    out[`${k}_n`] = v.n;
    out[`${k}_ms`] = v.sumMs;
  }
  for (const w of l.workers)
    for (const [k, v] of Object.entries(w)) out[k] = (out[k] ?? 0) + (Number(v) || 0);
  return out;
};

const a = api(cluster.url, cluster.devKey);
const second = 'bench-second';
await a('POST', '/v1/admin/tenants', { id: second, name: second });
const keyed = await a('POST', `/v1/admin/tenants/${second}/keys`, { scopes: ['apps.use', 'sessions.read'] });
const secondKey = (keyed.body as { key: string }).key;
const post1 = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
const post2 = leanPost(`${cluster.url}/v1/runs`, secondKey);
const one = async (post: typeof post1) => {
  const body = (await post(TRIVIAL_RUN_BODY)) as { status?: string };
  if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
};

type Side = 'lone' | 'two';
let side: Side = 'lone';
let counting = false;
let counted = 0;
let stop = false;
let turn = 0;
// Warm: every slot's host, both tenants' caches.
await Promise.all(
  Array.from({ length: 16 }, async (_, i) => {
    for (let k = 0; k < 4; k++) await one(i % 2 ? post2 : post1);
  }),
);
const clients = Promise.all(
  Array.from({ length: 16 }, async () => {
    while (!stop) {
      await one(side === 'lone' || turn++ % 2 === 0 ? post1 : post2);
      if (counting) counted++;
    }
  }),
);
const sampler = samplePool({
  redisUrl: cluster.redisUrl,
  runnerUrl: cluster.runners[0]!.url,
  mode: 'read-only',
  slots: SLOTS,
  everyMs: SAMPLE_MS,
});
const sums: Record<
  Side,
  { runs: number; s: number; ms: Record<string, number>; counts: Record<string, number> }
> = {
  lone: { runs: 0, s: 0, ms: {}, counts: {} },
  two: { runs: 0, s: 0, ms: {}, counts: {} },
};
const order: Side[] = [];
for (let c = 0; c < CYCLES; c++)
  order.push(...((c % 2 ? ['two', 'lone', 'lone', 'two'] : ['lone', 'two', 'two', 'lone']) as Side[]));
try {
  for (const s of order) {
    side = s;
    await new Promise((r) => setTimeout(r, 300)); // every client on the new side
    const before = await traceNow();
    counted = 0;
    counting = true;
    const t0 = performance.now();
    sampler.tag(s);
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    sampler.tag(undefined);
    counting = false;
    const secs = (performance.now() - t0) / 1000;
    const after = await traceNow();
    const sum = sums[s];
    sum.runs += counted;
    sum.s += secs;
    if (before && after) {
      const dm = sub(after.ms, before.ms);
      for (const [k, v] of Object.entries(dm)) sum.ms[k] = (sum.ms[k] ?? 0) + v;
      const dc = { ...sub(after.counts, before.counts), ...sub(workerSum(after), workerSum(before)) };
      for (const [k, v] of Object.entries(dc)) sum.counts[k] = (sum.counts[k] ?? 0) + v;
    }
  }
} finally {
  stop = true;
  const samples = await sampler.stop();
  await clients.catch((e) => console.error(e));
  await cluster.stop();
  for (const s of ['lone', 'two'] as Side[]) {
    const x = sums[s];
    const wall = x.ms.wall ?? 0;
    console.log(`\n${s}: ${x.runs} runs in ${x.s.toFixed(1)} s = ${(x.runs / x.s).toFixed(1)} runs/s`);
    console.log(`  sampler: ${poolLine(poolMeans(samples.get(s)), SLOTS)}`);
    if (wall > 0) {
      const states = Object.entries(x.ms)
        .filter(([k]) => k !== 'wall')
        .map(([k, v]) => `${k} ${(v / wall).toFixed(3)}`)
        .join(', ');
      console.log(`  runner's own (mean slots over ${(wall / 1000).toFixed(1)} s): ${states}`);
      const per = Object.entries(x.counts)
        .sort()
        .map(([k, v]) => `${k} ${(v / x.runs).toFixed(3)}`)
        .join(', ');
      console.log(`  a run: ${per}`);
      const offs = Object.keys(x.counts)
        .filter((k) => k.startsWith('off_') && k.endsWith('_n'))
        .map((k) => k.slice(4, -2))
        .map((k) => [k, (x.counts[`off_${k}_ms`] ?? 0) / Math.max(1, x.counts[`off_${k}_n`] ?? 0)] as const)
        .sort((p, q) => p[1] - q[1])
        .map(([k, v]) => `${k} +${v.toFixed(3)}`)
        .join(', ');
      console.log(`  a chain, mean ms after the slot was kept: ${offs}`);
    }
  }
  rmSync(TRACE, { force: true });
}
