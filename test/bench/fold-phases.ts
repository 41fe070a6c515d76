/**
 * `node test/bench/fold-phases.ts <lat.json>...` (round 39, `fold-off`): a sequential client's runs
 * (sequential.ts `LAT_DUMP`, no read between runs) by their place in the tenant's fold cycle,
 * with no Redis read to find it. One tenant, one client: each run appends two entries (its create
 * and its end) to the pending list, so the end that brings it to FOLD_AT comes every FOLD_AT / 2
 * runs, at a fixed phase of the run's index. The phase whose runs' mean is highest is the fold's;
 * printed: every run's p50/p90/p95/p98/p99, then that phase's and the next one's p50 and mean
 * (where a fold sent after the end lands: on the next run's submit) against the other phases'.
 */
import { readFileSync } from 'node:fs';

const PERIOD = Number(process.env.PERIOD ?? 32);
/** `PHASE=<k>`: the fold's phase as found on the base (a head that no longer slows it cannot show it). */
const PHASE = process.env.PHASE === undefined ? undefined : Number(process.env.PHASE);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

for (const file of process.argv.slice(2)) {
  const lat = JSON.parse(readFileSync(file, 'utf8')) as number[];
  const byPhase: number[][] = Array.from({ length: PERIOD }, () => []);
  for (let i = 0; i < lat.length; i++) byPhase[i % PERIOD]!.push(lat[i]!);
  // The fold's phase: the highest median (a median, so a GC in one run does not choose it).
  let fold = 0;
  for (let k = 1; k < PERIOD; k++) if (pct(byPhase[k]!, 50) > pct(byPhase[fold]!, 50)) fold = k;
  if (PHASE !== undefined) fold = PHASE;
  const next = (fold + 1) % PERIOD;
  const rest = byPhase.filter((_, k) => k !== fold && k !== next).flat();
  const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} mean ${mean(xs).toFixed(2)}`;
  console.log(
    `${file}: ${lat.length} runs: p50 ${pct(lat, 50).toFixed(2)} / p90 ${pct(lat, 90).toFixed(2)} / ` +
      `p95 ${pct(lat, 95).toFixed(2)} / p98 ${pct(lat, 98).toFixed(2)} / p99 ${pct(lat, 99).toFixed(2)} ms, ` +
      `mean ${mean(lat).toFixed(3)}`,
  );
  console.log(
    `  fold phase ${fold}: ${f(byPhase[fold]!)}; next run: ${f(byPhase[next]!)}; the other ${PERIOD - 2} phases: ${f(rest)}`,
  );
  // Of the runs above each percentile, how many are the fold's and the next run's (a run at
  // random: 1 in PERIOD of them each).
  const shares = [90, 95, 98, 99].map((p) => {
    const cut = pct(lat, p);
    const above = lat.map((ms, i) => [ms, i % PERIOD] as const).filter(([ms]) => ms > cut);
    const of = (k: number) => above.filter(([, ph]) => ph === k).length;
    return `>p${p} ${of(fold)}/${of(next)} of ${above.length}`;
  });
  const rest50 = pct(rest, 50);
  console.log(
    `  over the other phases' p50: fold run +${(pct(byPhase[fold]!, 50) - rest50).toFixed(2)}, next run ` +
      `+${(pct(byPhase[next]!, 50) - rest50).toFixed(2)} ms; fold/next runs above: ${shares.join(', ')} (at random ${(100 / PERIOD).toFixed(1)} % each)`,
  );
}
