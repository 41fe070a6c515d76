/**
 * `node --cpu-prof --cpu-prof-dir=<dir> test/bench/engine-stage-prof.ts`: the engine-stage bench's
 * sequential trivial runs (`GAP` ms apart, `RUNS` after `WARM`) with the sandbox host profiled too
 * (host-prof-preload.mjs, written to `PROF_OUT`, default /tmp/engine-stage-host.cpuprofile), for `profile-summary.ts` on both
 * sides: the engine's and its host's self time by function a run. Bench only.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@islet/engine';
import { PROGRAM } from './baselines.ts';
import { trivialRunOptions as opts } from './engine-run-options.ts';

const RUNS = Number(process.env.RUNS ?? 2000);
const WARM = Number(process.env.WARM ?? 200);
const GAP = Number(process.env.GAP ?? 3);
const OUT = process.env.PROF_OUT ?? '/tmp/engine-stage-host.cpuprofile';
const preload = fileURLToPath(new URL('./host-prof-preload.mjs', import.meta.url));
const engine = createEngine({
  maxIdlePerPartition: 1,
  maxRunsPerProcess: 1_000_000,
  maxHostResidentGrowthBytes: 2 ** 40,
  hostEnv: { NODE_OPTIONS: `--import ${preload}`, PROF_OUT: OUT, PROF_US: process.env.PROF_US ?? '50' },
});
let hostPid: number | undefined;
try {
  for (let i = 0; i < WARM + RUNS; i++) {
    await new Promise((r) => setTimeout(r, GAP));
    const out = await engine.execute(PROGRAM, opts());
    if (out.valueJson !== '12') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
    hostPid = out.hostPid;
  }
  if (hostPid !== undefined) process.kill(hostPid, 'SIGUSR2');
  for (let i = 0; i < 50 && !existsSync(OUT); i++) await new Promise((r) => setTimeout(r, 100));
} finally {
  await engine.close();
}
console.log(`${WARM + RUNS} runs, ${GAP} ms apart; host profile in ${OUT}`);
