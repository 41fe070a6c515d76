/**
 * `node test/bench/pickup-parts.ts` (round 49, `pickup-hop`): the one-client handed pick-up hop
 * (enqueue → pickedUp) split at the runner's points, from stamps a PROBE PATCH adds to the runner
 * (`git apply test/bench/pickup-parts.patch`; never in the product): the blocking connection's
 * socket read of the pop's answer, the pop's promise resolved, `startHanded` entered, its
 * `processJob` call, the processor, the executor's call, `pickedUp`. Every stamp is core's
 * `wallNow` (comparable across processes on one machine), so the first split (enqueued, the
 * gateway's stamp → the runner's read) is the gateway's send, Redis's script, its AOF write and
 * fsync and the wake-up. The cluster bench's one-client cluster (share 0.5); `WARM` runs (300),
 * then `RUNS` (1000). Timed: under the bench lock.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WARM = Number(process.env.WARM ?? 300);
const DIR = '/tmp/ph';

// The patch's runner writes its stamps here (/tmp/ph/stamps-<pid>.ndjson), 50 runs a write.
mkdirSync(DIR, { recursive: true });
const clear = () => {
  for (const f of readdirSync(DIR)) if (f.startsWith('stamps-')) rmSync(`${DIR}/${f}`);
};
clear();
const cluster = await startOneClientCluster('0.5', JSON.parse(process.env.BENCH_ENV ?? '{}'));
try {
  const once = stampedRun(cluster, () => performance.timeOrigin + performance.now());
  for (let i = 0; i < WARM; i++) await once();
  const runnerPid = cluster.runners[0]!.pid!;
  const file = `${DIR}/stamps-${runnerPid}.ndjson`;
  const skip = readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  for (let i = 0; i < RUNS; i++) await once();
  const rows = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(skip)
    .map((l) => JSON.parse(l) as Record<string, number>);
  const segs: [string, string, string][] = [
    ['enqueued → runner reads the pop’s answer', 'enq', 'popRead'],
    ['read → pop’s promise resolved', 'popRead', 'popped'],
    ['resolved → startHanded', 'popped', 'sh0'],
    ['startHanded → processJob called', 'sh0', 'sh1'],
    ['processJob → processor (fetchedAt)', 'sh1', 'proc'],
    ['processor → executor called', 'proc', 'exec0'],
    ['executor → pickedUp', 'exec0', 'picked'],
    ['whole: enqueued → pickedUp', 'enq', 'picked'],
  ];
  const q = (xs: number[], p: number) =>
    xs.sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))] ?? Number.NaN;
  const complete = rows.filter((r) =>
    segs.every(([, a, b]) => Number.isFinite(r[a]) && Number.isFinite(r[b])),
  );
  console.log(`runs with every stamp: ${complete.length} of ${rows.length}`);
  // The worker's registration (sent after the last run's end, with its pop): where it lies
  // against this run's enqueue stamp. Its fsync'd reply read after the enqueue stamp: the submit
  // reached a Redis still busy with the registration (its script, its AOF write and fsync).
  const reg = complete.filter((r) => Number.isFinite(r.regSent) && Number.isFinite(r.regRead));
  const late = reg.filter((r) => r.regRead! > r.enq!);
  const ahead = reg.map((r) => (r.enq! - r.regSent!) * 1000);
  console.log(
    `registration: sent before the enqueue stamp by p50 ${q(ahead, 0.5).toFixed(0)} µs (p10 ${q(ahead, 0.1).toFixed(0)}); ` +
      `its reply read after the enqueue stamp in ${late.length} of ${reg.length} runs` +
      (late.length
        ? `, by p50 ${q(
            late.map((r) => (r.regRead! - r.enq!) * 1000),
            0.5,
          ).toFixed(0)} µs`
        : ''),
  );
  // Sent in the last run's engine stage (its worker's loop waits for a next job once that job
  // started: slots are free), so its reply is normally read before this run's enqueue.
  const sentAfter: number[] = [];
  const answered: number[] = [];
  for (let i = 1; i < complete.length; i++) {
    const r = complete[i]!;
    if (!Number.isFinite(r.regSent) || !Number.isFinite(r.reg)) continue;
    sentAfter.push((r.regSent! - complete[i - 1]!.picked!) * 1000);
    answered.push((r.reg! - r.regSent!) * 1000);
  }
  console.log(
    `registration sent after the last run's pickedUp: p50 ${q(sentAfter, 0.5).toFixed(0)} µs; its reply read after its send: p50 ${q(answered, 0.5).toFixed(0)} µs, p90 ${q(answered, 0.9).toFixed(0)}`,
  );
  console.log('| segment | p50 µs | mean µs | p90 µs |\n|---|---|---|---|');
  for (const [name, a, b] of segs) {
    const d = complete.map((r) => (r[b]! - r[a]!) * 1000);
    const mean = d.reduce((s, x) => s + x, 0) / d.length;
    console.log(`| ${name} | ${q(d, 0.5).toFixed(0)} | ${mean.toFixed(0)} | ${q(d, 0.9).toFixed(0)} |`);
  }
} finally {
  await cluster.stop();
  clear();
}
