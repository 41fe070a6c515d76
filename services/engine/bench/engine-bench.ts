/**
 * `npm run bench:engine`: trivial runs through the engine (sandbox host processes, fresh isolate per
 * run) as ratios against the baselines measured in this same process by test/bench/baselines.ts
 * (the same ones the cluster bench uses): raw isolated-vm (new isolate + context + eval + dispose)
 * and a node process spawned per run. The raw baseline is measured before and after the engine and
 * the mean used, so a machine whose load moves shifts both sides alike. Also the idle memory of a
 * pooled sandbox host (/proc/<pid>/status and smaps_rollup). Each mode's CPU per run (this process
 * and its sandbox hosts, from /proc) is printed too: a loaded machine stretches a rate, much less
 * the CPU a run needs.
 *
 * BENCH_SECONDS (default 4): seconds per measured mode.
 */
import { spawn } from 'node:child_process';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);

async function main(): Promise<void> {
  const { engineBaseline, hostIdleMemory, hostStartCost, rawIsolateBaseline, spawnBaseline } = await import(
    '../../../test/bench/baselines.ts'
  );
  const raw1 = await rawIsolateBaseline(SECONDS);
  const engine = await engineBaseline(SECONDS);
  const raw2 = await rawIsolateBaseline(SECONDS);
  const spawned = await spawnBaseline(SECONDS);
  const memory = await hostIdleMemory();
  const start = await hostStartCost();
  const rawPerSec = (raw1.perSec + raw2.perSec) / 2;
  const rawP50 = (raw1.p50 + raw2.p50) / 2;

  const f = (n: number, d = 2) => n.toFixed(d).padStart(9);
  console.log(
    `islet engine bench — Node ${process.version}, ${SECONDS}s per mode, program: trivial arithmetic`,
  );
  console.log(
    `${'mode'.padEnd(44)}${'runs'.padStart(7)}${'runs/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'CPU ms/run'.padStart(11)}`,
  );
  const rows = [
    ['raw isolated-vm in-process (before)', raw1],
    ['engine, sequential', engine.sequential],
    ['engine, 4 concurrent', engine.concurrent],
    ['raw isolated-vm in-process (after)', raw2],
    ['spawn a node process per run', spawned],
  ] as const;
  const cpu = (s: { cpuMsPerRun?: number }) => (s.cpuMsPerRun ?? Number.NaN).toFixed(2).padStart(11);
  // A p99 over fewer than 100 runs is the slowest run: not printed as one.
  const p99 = (s: { runs: number; p99: number }) => (s.runs >= 100 ? f(s.p99) : '—'.padStart(9));
  for (const [name, s] of rows)
    console.log(
      `${name.padEnd(44)}${String(s.runs).padStart(7)}${f(s.perSec, 1)}${f(s.p50)}${p99(s)}${cpu(s)}`,
    );
  console.log('ratios (raw = mean of before and after):');
  console.log(
    `  engine sequential / raw throughput:   ${(engine.sequential.perSec / rawPerSec).toFixed(2)}x`,
  );
  console.log(
    `  engine 4 concurrent / raw throughput: ${(engine.concurrent.perSec / rawPerSec).toFixed(2)}x`,
  );
  console.log(
    `  engine sequential / spawn throughput: ${(engine.sequential.perSec / spawned.perSec).toFixed(2)}x`,
  );
  const rawCpu = ((raw1.cpuMsPerRun ?? 0) + (raw2.cpuMsPerRun ?? 0)) / 2;
  console.log(
    `  engine sequential CPU per run / raw:  ${((engine.sequential.cpuMsPerRun ?? 0) / rawCpu).toFixed(2)}x (this process + its hosts)`,
  );
  console.log(`  engine p50 / raw p50:                 ${(engine.sequential.p50 / rawP50).toFixed(2)}x`);
  console.log(`  engine p99 / raw p50:                 ${(engine.sequential.p99 / rawP50).toFixed(2)}x`);
  console.log(
    `  binding call (engine, instant handler): ${engine.callMs.toFixed(3)} ms; 100 parallel: ${engine.parallel100Ms.toFixed(2)} ms`,
  );
  console.log(
    `idle pooled host: RSS ${memory.rssMb.toFixed(1)} MB, PSS ${memory.pssMb.toFixed(1)} MB, ${memory.threads} threads`,
  );
  console.log(
    `host start: a run that starts its host ${start.wallMs.toFixed(0)} ms; the host's CPU through its first run ${start.cpuMs.toFixed(0)} ms`,
  );
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
