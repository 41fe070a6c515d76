/**
 * `node test/bench/engine-sequential.ts`: one caller's trivial runs through the engine alone, one
 * after another, for each pool size in `IDLE` (default `1,4`: one host, or a runner's four idle
 * hosts per tenant); p50, p90 and mean of `engine.execute`, and the hosts started and retired
 * (by reason) meanwhile, and the runs that waited for a host's start. `GAP` (ms, default 0) waits that long before each run, so each run finds
 * its host idle with its next isolate made: what is left is the host's answer to one run (the run
 * frame in, the program, `done` out), without the previous run's teardown or the next isolate's
 * making in the way. `RUNS` (default 1000) after 50 warm-up runs.
 */
import { createEngine } from '@islet/engine';
import { PROGRAM } from './baselines.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const GAP = Number(process.env.GAP ?? 0);
const IDLE = (process.env.IDLE ?? '1,4').split(',').map(Number);

for (const idle of IDLE) {
  let started = 0;
  const retired: Record<string, number> = {};
  const engine = createEngine({
    maxIdlePerPartition: idle,
    onProcessEvent: (e) => {
      if (e.type === 'started') started++;
      if (e.type === 'retired') retired[e.reason] = (retired[e.reason] ?? 0) + 1;
    },
  });
  try {
    for (let i = 0; i < 50; i++) await engine.execute(PROGRAM);
    const lat: number[] = [];
    // Runs that waited for a host's start (20 ms and more: not a hand-over between hosts).
    const startWaits: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      if (GAP) await new Promise((r) => setTimeout(r, GAP));
      const t = performance.now();
      const out = await engine.execute(PROGRAM);
      lat.push(performance.now() - t);
      if ((out.hostWaitMs ?? 0) >= 20) startWaits.push(out.hostWaitMs ?? 0);
      if (out.valueJson !== '12') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
    }
    lat.sort((a, b) => a - b);
    const at = (p: number) =>
      (lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? Number.NaN).toFixed(2);
    const mean = lat.reduce((a, b) => a + b, 0) / lat.length;
    console.log(
      `hosts ${idle}${GAP ? `, ${GAP} ms apart` : ''}: p50 ${at(0.5)} ms, p90 ${at(0.9)}, p99 ${at(0.99)}, ` +
        `mean ${mean.toFixed(2)}; hosts started ${started}, retired ${JSON.stringify(retired)}; ` +
        `runs that waited 20 ms or more for a host: ${startWaits.length}` +
        (startWaits.length ? ` (${startWaits.map((w) => w.toFixed(0)).join(', ')} ms)` : ''),
    );
  } finally {
    await engine.close();
  }
}
