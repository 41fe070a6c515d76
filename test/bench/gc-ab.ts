/**
 * `node test/bench/gc-ab.ts` (round 47, `tail-gc`): a one-client run's latency tail under Node flag
 * sets for the gateway and the runner, the sides **interleaved run by run** — one local cluster a
 * side (the cluster bench's one-client settings), all started at once; then `ROUNDS` rounds, each
 * one trivial sequential run on every side in an order rotated every round, so every side meets the
 * same minutes of this shared box (its load moves 2–3x within minutes: a p99 read side after side
 * is mostly the box). Each side's processes get `ISLET_DEV_NODE_FLAGS` (after `SERVICE_NODE_FLAGS`
 * on their command line: the last of a flag given twice wins) and `tail-log.ts` (their V8
 * collections on the stamps' clock, with the young generation's size at each scavenge).
 *
 *   SIDES='|--max-semi-space-size=4' ROUNDS=6000 BLOCK=1000 node test/bench/gc-ab.ts
 *   PAR=1 …  (then, for each side in turn, 16-client bursts: runs/s, interleaved the same way)
 *
 * Prints per side p50 / p90 / p99 / p99.9 over all rounds and per block of `BLOCK` rounds (each
 * block a pair of minutes every side shared: the count of blocks whose p99 is lower on a side is the
 * comparison), and the gateway's and runner's scavenges a run, pause summed a run and each pause's
 * p50 / max (the `gc` entry's duration, wall time), the young generation's size read back.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { pct } from './baselines.ts';
import { benchNow } from './bench-clock.ts';
import { stampedRun, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const SIDES = (process.env.SIDES ?? '|--max-semi-space-size=4').split('|');
const ROUNDS = Number(process.env.ROUNDS ?? 6000);
const BLOCK = Number(process.env.BLOCK ?? 1000);
const WARM = Number(process.env.WARM ?? 300);
const PAR = process.env.PAR === '1';
const PAR_RUNS = Number(process.env.PAR_RUNS ?? 800);
const PAR_ROUNDS = Number(process.env.PAR_ROUNDS ?? 4);
const SHM = '/dev/shm';
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];

interface GcEvent {
  who: string;
  kind: string;
  t: number;
  ms: number;
  newSpace?: number;
}

const preload = `--import ${new URL('./tail-log.ts', import.meta.url).pathname}`;
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${preload}`.trim();
const sides: {
  flags: string;
  dir: string;
  cluster: Awaited<ReturnType<typeof startOneClientCluster>>;
  run: () => Promise<{ sent: number; received: number }>;
  lat: number[];
  at: number[];
}[] = [];
try {
  for (const [i, flags] of SIDES.entries()) {
    const dir = `${SHM}/gc-ab-${process.pid}-${i}`;
    mkdirSync(dir, { recursive: true });
    // Read by devstack at each child's launch (cluster-child.ts) and inherited by the children.
    process.env.ISLET_DEV_NODE_FLAGS = flags;
    process.env.TAIL_LOG_DIR = dir;
    const cluster = await startOneClientCluster('0.5');
    sides.push({ flags, dir, cluster, run: stampedRun(cluster, benchNow), lat: [], at: [] });
  }
  console.log(`${sides.length} sides started ${new Date().toISOString().slice(11, 19)} load ${load()}`);
  for (let i = 0; i < WARM; i++) for (const s of sides) await s.run();
  const from = benchNow();
  console.log(`rounds from ${new Date().toISOString().slice(11, 19)} load ${load()}`);
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < sides.length; k++) {
      const s = sides[(r + k) % sides.length]!;
      const run = await s.run();
      s.lat.push(run.received - run.sent);
      s.at.push(run.sent);
    }
    // Each block's figures as it ends (a run cut short still leaves its blocks).
    if ((r + 1) % BLOCK === 0)
      console.log(
        `block ${(r + 1) / BLOCK} ${new Date().toISOString().slice(11, 19)} load ${load()}: ` +
          sides
            .map((s) => {
              const b = s.lat.slice(r + 1 - BLOCK);
              return `[${s.flags || 'defaults'}] p50 ${f(pct(b, 50))} p99 ${f(pct(b, 99))}`;
            })
            .join('  '),
      );
  }
  const to = benchNow();
  console.log(`rounds to ${new Date().toISOString().slice(11, 19)} load ${load()}`);
  await new Promise((r) => setTimeout(r, 2200)); // the children's 2 s log flush
  const blocks = Math.ceil(ROUNDS / BLOCK);
  const header = [
    'side',
    'p50',
    'p90',
    'p99',
    'p99.9',
    ...Array.from({ length: blocks }, (_, b) => `p99 b${b + 1}`),
  ];
  console.log(header.join(' | '));
  for (const s of sides) {
    const perBlock = Array.from({ length: blocks }, (_, b) =>
      pct(s.lat.slice(b * BLOCK, (b + 1) * BLOCK), 99),
    );
    console.log(
      [
        s.flags || 'defaults',
        ...[50, 90, 99, 99.9].map((p) => f(pct(s.lat, p))),
        ...perBlock.map((x) => f(x)),
      ].join(' | '),
    );
  }
  for (const s of sides) {
    const events: GcEvent[] = [];
    for (const file of readdirSync(s.dir))
      for (const l of readFileSync(`${s.dir}/${file}`, 'utf8').split('\n'))
        if (l) {
          const e = JSON.parse(l) as GcEvent;
          if (e.t >= from && e.t <= to) events.push(e);
        }
    for (const who of ['gateway', 'runner']) {
      const sc = events.filter((e) => e.who === who && e.kind === 'scavenge');
      const major = events.filter(
        (e) => e.who === who && (e.kind === 'mark-compact' || e.kind === 'incremental'),
      );
      const ms = sc.map((e) => e.ms);
      const sizes = [...new Set(sc.map((e) => e.newSpace))].map((b) => f((b ?? Number.NaN) / 1048576, 1));
      // A run a scavenge overlapped, and its latency against the side's p50.
      const hit = s.lat.filter((l, i) => sc.some((e) => e.t <= s.at[i]! + l && e.t + e.ms >= s.at[i]!));
      console.log(
        `${(s.flags || 'defaults').padEnd(28)} ${who.padEnd(8)} scavenges a run ${f(sc.length / ROUNDS, 4)} ` +
          `(1 every ${f(ROUNDS / Math.max(1, sc.length), 1)}), pause a run ${f(ms.reduce((a, x) => a + x, 0) / ROUNDS, 3)} ms, ` +
          `each p50 ${f(pct(ms, 50))} / p90 ${f(pct(ms, 90))} / max ${f(Math.max(0, ...ms))}; major+incremental ${major.length}; ` +
          `new_space MiB ${sizes.join(',')}; runs overlapped ${hit.length}, their p50 ${f(pct(hit, 50))}`,
      );
    }
  }
  if (PAR) {
    const par: number[][] = sides.map(() => []);
    for (let r = 0; r < PAR_ROUNDS; r++)
      for (let k = 0; k < sides.length; k++) {
        const i = (r + k) % sides.length;
        const run = trivialRun(sides[i]!.cluster, 'gc-ab par');
        const t0 = performance.now();
        let left = PAR_RUNS;
        await Promise.all(
          Array.from({ length: 16 }, async () => {
            while (left-- > 0) await run();
          }),
        );
        par[i]!.push((PAR_RUNS * 1000) / (performance.now() - t0));
      }
    for (const [i, s] of sides.entries())
      console.log(
        `${(s.flags || 'defaults').padEnd(28)} 16 clients runs/s ${par[i]!.map((x) => f(x, 1)).join(' / ')}`,
      );
  }
} finally {
  for (const s of sides) {
    await s.cluster.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
}
