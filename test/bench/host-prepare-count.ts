/**
 * `node test/bench/host-prepare-count.ts`: when the engine's hosts make their next isolates, in
 * counts (`engine.stats().isolates`): runs after which a host's build was deferred, `prepare`s
 * asked of idle hosts, and runs that waited for their isolate's build (made on their path), a run,
 * through the engine alone. Phases on one engine with `IDLE` (default 4) idle hosts a partition,
 * each `RUNS` (default 500) runs: one caller with `GAP` ms (default 4, about a run over HTTP's time
 * outside the engine) before each run, then `CALLERS` (default 4, a runner's slots; comma-separated for more phases) callers back to back. A
 * partition's hosts are started first by a burst of `IDLE` callers. Also each phase's p50 of
 * `engine.execute` (noise on a loaded box: the counts are the figures). `IDLE_PREPARE_MS` (default
 * 1000) is the engine's `idlePrepareMs`; 0, the engine's default, defers nothing.
 */
import { createEngine } from '@islet/engine';
import { PROGRAM } from './baselines.ts';

const RUNS = Number(process.env.RUNS ?? 500);
const GAP = Number(process.env.GAP ?? 4);
const IDLE = Number(process.env.IDLE ?? 4);
const CALLERS = (process.env.CALLERS ?? '4').split(',').map(Number);
/** The engine's `idlePrepareMs` (its default, 0, defers nothing). */
const IDLE_PREPARE_MS = Number(process.env.IDLE_PREPARE_MS ?? 1000);

const engine = createEngine({ maxIdlePerPartition: IDLE, idlePrepareMs: IDLE_PREPARE_MS });
const counts = () => engine.stats?.().isolates ?? { deferred: NaN, asked: NaN, madeOnPath: NaN };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function phase(name: string, callers: number, gap: number): Promise<void> {
  const before = counts();
  const lat: number[] = [];
  let left = RUNS;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (left-- > 0) {
        if (gap) await sleep(gap);
        const t = performance.now();
        const out = await engine.execute(PROGRAM);
        lat.push(performance.now() - t);
        if (out.status !== 'completed') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
      }
    }),
  );
  const after = counts();
  lat.sort((a, b) => a - b);
  const per = (k: keyof typeof before) => ((after[k] - before[k]) / lat.length).toFixed(3);
  console.log(
    `${name.padEnd(28)} runs ${lat.length}  deferred ${per('deferred')}  asked ${per('asked')}  ` +
      `made on the run's path ${per('madeOnPath')} a run  execute p50 ${lat[Math.floor(lat.length / 2)]?.toFixed(2)} ms`,
  );
}

try {
  await phase(`warm-up (${IDLE} callers)`, IDLE, 0);
  await phase(`1 caller, ${GAP} ms apart`, 1, GAP);
  for (const c of CALLERS) await phase(`${c} callers back to back`, c, 0);
  await phase(`1 caller, ${GAP} ms apart`, 1, GAP);
} finally {
  await engine.close();
}
