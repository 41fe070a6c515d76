/**
 * `node services/engine/bench/host-threads.ts`: one sandbox host's CPU and context switches per
 * trivial run by thread name (the main thread, V8's workers, node's), `RUNS` (default 1000)
 * sequential runs after 50 of warm-up, no host start in the window. FLAGS: extra node flags for
 * the host (e.g. `FLAGS=--single-threaded-gc`), inserted through `wrapCommand` as the engine's own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '../src/index.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const FLAGS = (process.env.FLAGS ?? '').split(' ').filter(Boolean);
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const TICK_MS = 10;

let pid = 0;
const engine = createEngine({
  maxIdlePerPartition: 1,
  prewarm: false,
  maxRunsPerProcess: 1_000_000,
  maxHostResidentGrowthBytes: 0,
  wrapCommand: (command, args) => ({ command, args: [...FLAGS, ...args] }),
  onProcessEvent: (e) => {
    if (e.type === 'started' && e.pid !== undefined) pid = e.pid;
  },
});

/** Per thread name (threads of one name summed): CPU ms and context switches so far. */
function threads(): Map<string, { cpuMs: number; switches: number }> {
  const out = new Map<string, { cpuMs: number; switches: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\S+)`, 'm').exec(status)?.[1] ?? 0);
    const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?';
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    const was = out.get(name) ?? { cpuMs: 0, switches: 0 };
    out.set(name, {
      cpuMs: was.cpuMs + (f[11]! + f[12]!) * TICK_MS,
      switches: was.switches + field('voluntary_ctxt_switches') + field('nonvoluntary_ctxt_switches'),
    });
  }
  return out;
}

try {
  const run = async () => {
    const out = await engine.execute(PROGRAM);
    if (out.valueJson !== '12') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
  };
  for (let i = 0; i < 50; i++) await run();
  const before = threads();
  for (let i = 0; i < RUNS; i++) await run();
  const after = threads();
  console.log(`host flags: ${FLAGS.join(' ') || "(the engine's)"}, per run:`);
  for (const [name, now] of after) {
    const was = before.get(name) ?? { cpuMs: 0, switches: 0 };
    console.log(
      `  ${name.padEnd(18)} CPU ${((now.cpuMs - was.cpuMs) / RUNS).toFixed(3)} ms, ${((now.switches - was.switches) / RUNS).toFixed(3)} context switches`,
    );
  }
} finally {
  await engine.close();
}
