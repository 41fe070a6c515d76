/**
 * A sandbox host's start, host by host (round 39 `host-start`): each of HOSTS hosts started by a run
 * in a fresh partition (no prewarm, no spare), the run's wall time, then the host's CPU through that
 * run and the next isolate it makes, read 300 ms later from /proc/<pid>/task/<tid>/schedstat (ns on
 * a CPU, every thread: V8's workers too), summed. baselines.ts `hostStartCost` reads the same from
 * /proc/<pid>/stat in 10 ms ticks; this one is exact to the ns, and prints p50 and mean.
 *
 *   node test/bench/host-start.ts            (HOSTS=30)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '../../services/engine/src/index.ts';

const HOSTS = Number(process.env.HOSTS ?? 30);
const PROGRAM = 'return [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0)';

function cpuNs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  }
  return ns;
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const engine = createEngine({ prewarm: false, maxIdleTotal: 2, maxIdlePerPartition: 1 });
const wall: number[] = [];
const cpu: number[] = [];
try {
  // One host started and gone first: the engine's own first start (its imports, the addon's path).
  await engine.execute(PROGRAM, { partition: 'warm' });
  for (let i = 0; i < HOSTS; i++) {
    const t = performance.now();
    const out = await engine.execute(PROGRAM, { partition: `start-${i}` });
    wall.push(performance.now() - t);
    if (out.valueJson !== '12') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
    await new Promise((r) => setTimeout(r, 300));
    cpu.push(cpuNs(out.hostPid!) / 1e6);
  }
} finally {
  await engine.close();
}
console.log(
  `host start (${HOSTS} hosts): a run that starts its host p50 ${p50(wall).toFixed(1)} ms mean ${mean(wall).toFixed(1)} ms; ` +
    `the host's CPU through its first run p50 ${p50(cpu).toFixed(1)} ms mean ${mean(cpu).toFixed(1)} ms`,
);
