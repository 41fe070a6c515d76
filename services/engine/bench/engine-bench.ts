/**
 * `npm run bench:engine`: trivial runs per second and p50/p99 latency through the engine (sandbox
 * host process, fresh isolate per run), beside raw in-process isolated-vm (a new isolate per run in
 * this process) and spawning a node process per run, all measured in this one invocation.
 * Each mode runs for a fixed time (BENCH_SECONDS, default 4) after a short warm-up.
 */
import { spawn } from 'node:child_process';
import { createEngine } from '../src/index.ts';

interface Result {
  name: string;
  runs: number;
  seconds: number;
  p50: number;
  p99: number;
}

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function measure(
  name: string,
  once: () => Promise<void>,
  seconds = SECONDS,
  maxRuns = 1e9,
): Promise<Result> {
  for (let i = 0; i < 3; i++) await once();
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + seconds * 1000;
  while (performance.now() < until && latencies.length < maxRuns) {
    const t = performance.now();
    await once();
    latencies.push(performance.now() - t);
  }
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    name,
    runs: latencies.length,
    seconds: elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

async function main(): Promise<void> {
  const ivm = (await import('isolated-vm')).default;
  const results: Result[] = [];

  const engine = createEngine();
  results.push(
    await measure('engine (host process, fresh isolate)', async () => {
      const out = await engine.execute(PROGRAM, { limits: { timeoutMs: 10_000 } });
      if (out.valueJson !== '12') throw new Error(`engine run failed: ${JSON.stringify(out.failure)}`);
    }),
  );
  await engine.close();

  results.push(
    await measure('raw isolated-vm in-process (new isolate)', async () => {
      const isolate = new ivm.Isolate({ memoryLimit: 512 });
      try {
        const context = await isolate.createContext();
        const value = await context.eval(`(async () => { ${PROGRAM} })()`, {
          promise: true,
          timeout: 10_000,
        });
        if (value !== 12) throw new Error('raw run failed');
      } finally {
        isolate.dispose();
      }
    }),
  );

  results.push(
    await measure(
      'spawn a node process per run',
      () =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, ['-e', `(async () => { ${PROGRAM} })().then(console.log)`], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          child.stdout.on('data', (c: Buffer) => {
            out += c.toString();
          });
          child.on('exit', () => (out.trim() === '12' ? resolve() : reject(new Error('spawned run failed'))));
        }),
      SECONDS,
      200,
    ),
  );

  const fmt = (n: number, d = 2) => n.toFixed(d).padStart(9);
  console.log(
    `islet engine bench — Node ${process.version}, ${SECONDS}s per mode, program: trivial arithmetic`,
  );
  console.log(
    `${'mode'.padEnd(42)}${'runs'.padStart(7)}${'runs/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}`,
  );
  for (const r of results) {
    console.log(
      `${r.name.padEnd(42)}${String(r.runs).padStart(7)}${fmt(r.runs / r.seconds, 1)}${fmt(r.p50)}${fmt(r.p99)}`,
    );
  }
  const [eng, raw, spawned] = results as [Result, Result, Result];
  const rate = (r: Result) => r.runs / r.seconds;
  console.log('ratios:');
  console.log(`  engine / raw isolated-vm throughput: ${(rate(eng) / rate(raw)).toFixed(2)}x`);
  console.log(`  engine / spawn-per-run throughput:   ${(rate(eng) / rate(spawned)).toFixed(2)}x`);
  console.log(`  engine p50 latency vs raw:           ${(eng.p50 / raw.p50).toFixed(2)}x`);
  console.log(`  engine p50 latency vs spawn:         ${(eng.p50 / spawned.p50).toFixed(2)}x`);
}

// isolated-vm needs --no-node-snapshot on Node >= 20 in this process too (for the raw mode).
if (!process.execArgv.includes('--no-node-snapshot')) {
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', ...process.execArgv, ...process.argv.slice(1)],
    {
      stdio: 'inherit',
    },
  );
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}
