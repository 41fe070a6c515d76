/**
 * `node --no-node-snapshot services/engine/bench/isolate-stages.ts`: CPU per stage of a host-like
 * isolate (as host.ts prepares and runs one: isolate at 512 MiB, context, the six callbacks, the
 * harness from its warmed code cache, its top level, the two references, the first turn of a
 * trivial program ending in a dispose from `done`) against raw isolated-vm's (isolate, context,
 * the program by `evalSync`, dispose), both in this process, `ROUNDS` (default 2) interleaved rounds of `RUNS`
 * (default 300); page faults per isolate from `process.resourceUsage`. DISPOSE_AFTER=1 and
 * CACHE=top: see below.
 */
import { setFlagsFromString } from 'node:v8';
import ivm from 'isolated-vm';
import { hostLikeRun, TRIVIAL_PROGRAM, topLevelHarnessCache, warmHarnessCache } from './host-like-isolate.ts';

// As the host: `--max-semi-space-size` (if given, for this process's heap) must not reach the isolates.
setFlagsFromString('--max-semi-space-size=0');
const RUNS = Number(process.env.RUNS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
/** DISPOSE_AFTER=1: the host-like isolate is disposed after its first turn returned, not from `done`. */
const DISPOSE_AFTER = process.env.DISPOSE_AFTER === '1';
/** CACHE=top: the harness from a top-level-only code cache instead of the warmed one. */
const cache = process.env.CACHE === 'top' ? topLevelHarnessCache() : warmHarnessCache();
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

type Stages = Map<string, number>;
function timer(stages: Stages) {
  let t = cpuMs();
  return (stage: string) => {
    const now = cpuMs();
    stages.set(stage, (stages.get(stage) ?? 0) + now - t);
    t = now;
  };
}

function hostLike(stages: Stages): void {
  hostLikeRun(cache, 512, timer(stages), DISPOSE_AFTER);
}

function raw(stages: Stages): void {
  const lap = timer(stages);
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  lap('isolate');
  const context = isolate.createContextSync();
  lap('context');
  const value: unknown = context.evalSync(`(() => { ${TRIVIAL_PROGRAM} })()`);
  lap('program');
  isolate.dispose();
  lap('dispose');
  if (value !== 12) throw new Error('raw run failed');
}

const totals = { host: new Map() as Stages, raw: new Map() as Stages };
const faults = { host: 0, raw: 0 };
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of r % 2 === 0 ? (['host', 'raw'] as const) : (['raw', 'host'] as const)) {
    const run = kind === 'host' ? hostLike : raw;
    for (let i = 0; i < 30; i++) run(new Map());
    const f0 = process.resourceUsage().minorPageFault;
    for (let i = 0; i < RUNS; i++) run(totals[kind]);
    faults[kind] += process.resourceUsage().minorPageFault - f0;
  }
}
for (const kind of ['host', 'raw'] as const) {
  const n = RUNS * ROUNDS;
  const all = [...totals[kind].values()].reduce((a, b) => a + b, 0);
  console.log(
    `${kind}: ${(all / n).toFixed(3)} ms CPU, ${(faults[kind] / n).toFixed(1)} page faults per isolate`,
  );
  for (const [stage, ms] of totals[kind]) console.log(`  ${stage.padEnd(28)} ${(ms / n).toFixed(3)}`);
}
