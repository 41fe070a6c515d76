/**
 * `node test/bench/first-call-cache.ts` (round 39, `first-call`): a call-making run's turns in a
 * fresh isolate whose harness came from either code cache — the one warmed by a program with no call
 * (host.ts until round 39) or by `warmHarness` (its calls made and answered) — alternated isolate by
 * isolate in one process, on this thread as the host runs them (no host process, pipes or engine).
 * Each turn's wall time (`applySync`): the first (the program to its first call), then each outcome's
 * delivery to the next call; the isolate's own CPU (`cpuTime`) a run. `RUNS` isolates of each
 * (default 400), `CALLS` sequential calls (default 4); p50 µs.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { installHarness, warmHarness } from '../../services/engine/src/harness-install.ts';
import { pct } from './baselines.ts';

const RUNS = Number(process.env.RUNS ?? 400);
const CALLS = Number(process.env.CALLS ?? 4);
const SOURCE = readFileSync(new URL('../../services/engine/src/guest/harness.js', import.meta.url), 'utf8');
const ignore = () => undefined;
type Cache = ivm.ExternalCopy<ArrayBuffer>;

function cacheAfter(run: (isolate: ivm.Isolate, context: ivm.Context) => void): Cache {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  try {
    run(isolate, isolate.createContextSync());
    const again = isolate.compileScriptSync(SOURCE, {
      filename: 'islet:harness',
      produceCachedData: true,
    } as ivm.ScriptInfo) as ivm.Script & { cachedData?: Cache };
    if (!again.cachedData) throw new Error('no code cache');
    return again.cachedData;
  } finally {
    isolate.dispose();
  }
}

const noCall = cacheAfter((isolate, context) => {
  const { entry } = installHarness(isolate, context, SOURCE, {
    log: ignore,
    call: ignore,
    done: ignore,
    fail: ignore,
  });
  entry.applySync(undefined, [
    'start',
    'console.log("warm"); const d = new Date(); return { n: [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0), t: d.getTime() + Date.now(), r: Math.random() < 2 };',
    JSON.stringify({ bindings: ['warm.up', 'warmup'], clockMs: 0, seed: 'warm' }),
    undefined,
    undefined,
    true,
  ]);
});
const withCalls = cacheAfter((isolate, context) => void warmHarness(isolate, context, SOURCE));
const program = `for (let i = 0; i < ${CALLS}; i++) await apps.bench.ping({ i }); return 1`;
const config = JSON.stringify({ bindings: ['bench.ping'], clockMs: 0, seed: 's' });

function run(cache: Cache): { turns: number[]; cpuUs: number; installUs: number } {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  try {
    const context = isolate.createContextSync();
    const calls: number[] = [];
    let ended = false;
    const t0 = performance.now();
    const { entry } = installHarness(
      isolate,
      context,
      SOURCE,
      {
        log: ignore,
        call: (id) => void calls.push(id as number),
        done: () => {
          ended = true;
        },
        fail: ignore,
      },
      { cachedData: cache },
    );
    // What the host's prepare does while idle, off the run's path: the cache's deserialization in it.
    const installUs = (performance.now() - t0) * 1000;
    const cpu0 = isolate.cpuTime;
    const turns: number[] = [];
    let t = performance.now();
    entry.applySync(undefined, ['start', program, config, undefined, undefined, true], { timeout: 1000 });
    turns.push((performance.now() - t) * 1000);
    for (let k = 0; k < calls.length && !ended; k++) {
      t = performance.now();
      entry.applySync(undefined, ['result', calls[k], '{"ok":true}', undefined, undefined, true], {
        timeout: 1000,
      });
      turns.push((performance.now() - t) * 1000);
    }
    if (!ended) throw new Error('the program did not end');
    return { turns, cpuUs: Number(isolate.cpuTime - cpu0) / 1000, installUs };
  } finally {
    isolate.dispose();
  }
}

const rows = {
  'no-call warm-up (base)': [] as ReturnType<typeof run>[],
  'calls warm-up (head)': [] as ReturnType<typeof run>[],
};
for (let i = 0; i < 30; i++) {
  run(noCall);
  run(withCalls);
}
for (let i = 0; i < RUNS; i++) {
  rows['no-call warm-up (base)'].push(run(noCall));
  rows['calls warm-up (head)'].push(run(withCalls));
}
console.log(
  `code cache: no-call warm-up ${noCall.copy().byteLength} B, calls warm-up ${withCalls.copy().byteLength} B`,
);
console.log(
  `p50 µs, ${RUNS} fresh isolates each, alternated; turn 0 = start → 1st call, turn k = outcome k → next call (or the end)`,
);
for (const [name, rs] of Object.entries(rows)) {
  const turns = rs[0]!.turns.map((_, k) =>
    pct(
      rs.map((r) => r.turns[k]!),
      50,
    ).toFixed(1),
  );
  console.log(
    `${name.padEnd(26)} turns ${turns.join(' / ')}; isolate CPU a run ${pct(
      rs.map((r) => r.cpuUs),
      50,
    ).toFixed(1)}; the harness installed from the cache (the prepare, while idle) ${pct(
      rs.map((r) => r.installUs),
      50,
    ).toFixed(1)}`,
  );
}
