/**
 * Round 35 (`timer-bound`): what a sandbox host keeps and wakes for its turns' deadlines. One
 * engine (growth bound off), `RUNS` runs in one host, each `CALLS` parallel calls answered at once
 * (0: a trivial run), the run's budget `BUDGET_MS` (default the product's 120 s). Prints, for the
 * serving host after run 1 and after the last: private memory (RssAnon + RssShmem) and VmRSS past
 * run 1, its threads, and each thread's voluntary context switches (wake-ups) a run over the runs
 * — isolated-vm's timer thread (its records live for the budget) or the turn watchdog's thread.
 * `node test/bench/turn-records.ts`; counts and memory, not time: no lock needed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';

const CALLS = Number(process.env.CALLS ?? 0);
const RUNS = Number(process.env.RUNS ?? 2000);
const BUDGET_MS = Number(process.env.BUDGET_MS ?? 120_000);

// HOST_TUNABLES: the hosts' GLIBC_TUNABLES instead of HOST_ENV's (to see what malloc's padding holds).
const engine = createEngine({
  maxHostResidentGrowthBytes: 0,
  maxRunsPerProcess: RUNS + 10,
  prewarm: false,
  ...(process.env.HOST_TUNABLES !== undefined
    ? { hostEnv: { GLIBC_TUNABLES: process.env.HOST_TUNABLES } }
    : {}),
});
const code =
  CALLS > 0
    ? `return (await Promise.all(Array.from({ length: ${CALLS} }, (_, i) => t({ i })))).length;`
    : 'return 1';
const answer = { type: 'result' as const, valueJson: '{"n":1}' };

const status = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rss: kb('VmRSS'), anon: kb('RssAnon') + kb('RssShmem') };
};
/** tid → [name, voluntary switches]. */
const threads = (pid: number) => {
  const out = new Map<string, [string, number]>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/status`, 'latin1');
      out.set(tid, [
        /^Name:\s+(.*)$/m.exec(s)![1]!,
        Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(s)![1]),
      ]);
    } catch {
      // exited meanwhile
    }
  }
  return out;
};

let pid: number | undefined;
let base: ReturnType<typeof status> | undefined;
let before: ReturnType<typeof threads> | undefined;
const t0 = performance.now();
for (let run = 1; run <= RUNS; run++) {
  const out = await engine.execute(code, {
    bindings: ['t'],
    limits: { timeoutMs: BUDGET_MS },
    partition: 'bench',
    onCall: async () => answer,
  });
  if (out.status !== 'completed') throw new Error(JSON.stringify(out.failure));
  if (run === 1) {
    pid = out.hostPid!;
    base = status(pid);
    before = threads(pid);
  } else if (out.hostPid !== pid) throw new Error(`run ${run} in another host (${out.hostPid})`);
}
const secs = (performance.now() - t0) / 1000;
const now = status(pid!);
const after = threads(pid!);
console.log(
  `${RUNS} runs of ${CALLS} calls in host ${pid} (${(RUNS / secs).toFixed(0)} runs/s, budget ${BUDGET_MS} ms): ` +
    `private +${now.anon - base!.anon} KiB (${(((now.anon - base!.anon) * 1024) / (RUNS - 1)).toFixed(0)} B a run), ` +
    `VmRSS +${now.rss - base!.rss} KiB; threads ${before!.size} → ${after.size}`,
);
for (const [tid, [name, v]] of after) {
  const was = before!.get(tid)?.[1];
  const d = was === undefined ? `new, ${v}` : `${v - was}`;
  console.log(
    `  ${tid} ${name}: voluntary switches ${d} (${((v - (was ?? 0)) / (RUNS - 1)).toFixed(2)} a run)`,
  );
}
for (const tid of before!.keys()) if (!after.has(tid)) console.log(`  ${tid} ${before!.get(tid)![0]}: gone`);
// IDLE_MS: the host idle that long (its next isolate made meanwhile), then its absolute VmRSS and PSS.
if (process.env.IDLE_MS) {
  await new Promise((r) => setTimeout(r, Number(process.env.IDLE_MS)));
  const pss = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'))?.[1]);
  const idle = status(pid!);
  console.log(
    `idle ${process.env.IDLE_MS} ms: VmRSS ${(idle.rss / 1024).toFixed(1)} MB, private ${(idle.anon / 1024).toFixed(1)} MB, PSS ${(pss / 1024).toFixed(1)} MB`,
  );
}
await engine.close();
