/**
 * Round 34 (`par-calls`): how a sandbox host's memory grows over runs of `CALLS` parallel binding
 * calls (the cluster bench's 100-call row), and when the engine's growth bound would retire it
 * by VmRSS (the bound until round 34) or by private memory (RssAnon + RssShmem, since). One engine,
 * its growth bound off, `RUNS` runs answered at once (or in `BURSTS` bursts `BURST_GAP_MS` apart,
 * as the runner hands a gateway answer's chunks to its host); every `EVERY` runs the serving
 * host's VmRSS, RssAnon, RssFile (KiB past its first run). Prints the first run past `BOUND_MIB`
 * (default 5) for each reading, counted from run 1 and from run `SETTLED` (a later baseline).
 * `node test/bench/host-growth-calls.ts`; memory, not time: no lock needed.
 */
import { readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';

const CALLS = Number(process.env.CALLS ?? 100);
const RUNS = Number(process.env.RUNS ?? 1000);
const EVERY = Number(process.env.EVERY ?? 16);
const SETTLED = Number(process.env.SETTLED ?? 64);
const BOUND_KIB = Number(process.env.BOUND_MIB ?? 5) * 1024;
const BURSTS = Number(process.env.BURSTS ?? 0);
const BURST_GAP_MS = Number(process.env.BURST_GAP_MS ?? 1);

const live = new Set<number>();
const engine = createEngine({
  maxHostResidentGrowthBytes: 0,
  maxRunsPerProcess: RUNS + 10,
  prewarm: false,
  // HOST_FLAGS: node/V8 flags on the host's command line (e.g. --heapsnapshot-signal=SIGUSR2).
  ...(process.env.HOST_FLAGS
    ? {
        wrapCommand: (command: string, args: string[]) => ({
          command,
          args: [...process.env.HOST_FLAGS!.split(' '), ...args],
        }),
      }
    : {}),
  // HOST_WRAP: a command the host runs under (e.g. heaptrack), its command line after it.
  ...(process.env.HOST_WRAP
    ? {
        startupTimeoutMs: 120_000,
        wrapCommand: (command: string, args: string[]) => ({
          command: process.env.HOST_WRAP!,
          args: [command, ...args],
        }),
      }
    : {}),
  onProcessEvent: (e) => {
    if (e.pid === undefined) return;
    if (e.type === 'started') live.add(e.pid);
    else live.delete(e.pid);
  },
});
const code = `return (await Promise.all(Array.from({ length: ${CALLS} }, (_, i) => t({ i })))).length;`;
const answer = { type: 'result' as const, valueJson: '{"n":1}' };
const burst: { at: number; waiters: (() => void)[] }[] = [];
const later = (i: number) =>
  new Promise<void>((resolve) => {
    const b = i % BURSTS;
    if (!burst[b]) {
      const entry = { at: b, waiters: [] as (() => void)[] };
      burst[b] = entry;
      setTimeout(
        () => {
          burst[b] = undefined as never;
          for (const w of entry.waiters) w();
        },
        BURST_GAP_MS * (b + 1),
      );
    }
    burst[b]!.waiters.push(resolve);
  });

const status = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rss: kb('VmRSS'), anon: kb('RssAnon') + kb('RssShmem'), file: kb('RssFile') };
};

type Reading = ReturnType<typeof status>;
const first: Partial<Record<string, number>> = {};
let base: Reading | undefined;
let settled: Reading | undefined;
let pid: number | undefined;
for (let run = 1; run <= RUNS; run++) {
  const out = await engine.execute(code, {
    bindings: ['t'],
    limits: { timeoutMs: 60_000 },
    partition: 'bench',
    onCall:
      BURSTS > 0
        ? async (call) => {
            await later((JSON.parse(call.argsJson) as { i: number }).i);
            return answer;
          }
        : async () => answer,
  });
  if (out.status !== 'completed') throw new Error(JSON.stringify(out.failure));
  if (run === 1) {
    pid = [...live][0];
    base = status(pid!);
    console.log(`host ${pid}: after run 1 VmRSS ${base.rss} KiB, private ${base.anon}, file ${base.file}`);
  }
  // SNAP_AT: runs after which the host is sent SIGUSR2 (a heap snapshot with the flag above).
  if ((process.env.SNAP_AT ?? '').split(',').includes(String(run))) {
    process.kill(pid!, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 3000));
  }
  if (run !== 1 && run % EVERY !== 0 && run !== SETTLED) continue;
  const now = status(pid!);
  if (run === SETTLED) settled = now;
  const grown = { rss: now.rss - base!.rss, anon: now.anon - base!.anon, file: now.file - base!.file };
  for (const k of ['rss', 'anon'] as const) {
    if (first[k] === undefined && grown[k] > BOUND_KIB) first[k] = run;
    const since = settled ? now[k] - settled[k] : 0;
    if (settled && first[`${k} settled`] === undefined && since > BOUND_KIB) first[`${k} settled`] = run;
  }
  if (run % (EVERY * 8) === 0 || run === SETTLED)
    console.log(
      `run ${run}: +KiB since run 1: VmRSS ${grown.rss}, private ${grown.anon}, file ${grown.file}`,
    );
}
console.log(
  `first run past +${BOUND_KIB / 1024} MiB (checked every ${EVERY}): VmRSS ${first.rss ?? 'none'}, private ${first.anon ?? 'none'}; ` +
    `since run ${SETTLED}: VmRSS ${first['rss settled'] ?? 'none'}, private ${first['anon settled'] ?? 'none'} (of ${RUNS})`,
);
await engine.close();
