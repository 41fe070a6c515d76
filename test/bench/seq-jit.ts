/**
 * `node test/bench/seq-jit.ts` (round 46, `seq-attr`): what V8 still compiles and throws away in the
 * gateway and the runner a one-client sequential trivial run (the cluster bench's share 0.5), after
 * `WARM` runs (default 300), over `RUNS` (default 400): their `--trace-opt --trace-deopt` lines
 * (`ISLET_DEV_NODE_FLAGS`, cluster-child.ts; read from the cluster's `verbose` output) counted a
 * run by kind and by function. seq-syscalls.ts reads ~1.0–1.5 V8 worker wake-ups a run in each of
 * the two, gone with `--single-threaded` but not with `--single-threaded-gc`: compile jobs, not GC.
 * Counts: read at any load, no lock.
 */
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 400);
const WARM = Number(process.env.WARM ?? 300);
process.env.ISLET_DEV_NODE_FLAGS = `${process.env.ISLET_DEV_NODE_FLAGS ?? ''} --trace-opt --trace-deopt`;

let counting = false;
const kinds = new Map<string, number>();
const fns = new Map<string, number>();
const write = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
  const m = /^\[(gateway|runner)-\d+\] (.*)$/s.exec(text);
  if (!m) return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  if (!counting) return true;
  const [, who, line] = m as unknown as [string, string, string];
  const kind =
    /\[(marking|compiling method|completed compiling|completed optimizing|bailout|deoptimiz\w*|optimizing)/.exec(
      line,
    )?.[1] ?? (/reason: /.test(line) ? 'deopt reason' : undefined);
  if (!kind) return true;
  const key = `${who} ${kind}`;
  kinds.set(key, (kinds.get(key) ?? 0) + 1);
  const fn = /<JSFunction ([^ >]+)/.exec(line)?.[1] ?? /for (\S+)/.exec(line)?.[1];
  if (fn) {
    const f = `${key}: ${fn}${/target (\w+)/.exec(line)?.[1] ? ` (${/target (\w+)/.exec(line)?.[1]})` : ''}`;
    fns.set(f, (fns.get(f) ?? 0) + 1);
  }
  return true;
}) as typeof process.stderr.write;

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: { ISLET_TENANT_POOL_SHARE: '0.5', ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  verbose: true,
});
try {
  const once = trivialRun(cluster, 'Seq JIT');
  await burst(once, WARM, 1);
  await new Promise((r) => setTimeout(r, 300));
  counting = true;
  await burst(once, RUNS, 1);
  await new Promise((r) => setTimeout(r, 300));
  counting = false;
  console.log(`V8 trace lines a run over ${RUNS} one-client runs after ${WARM}:`);
  for (const [k, v] of [...kinds].sort()) console.log(`  ${k.padEnd(40)} ${(v / RUNS).toFixed(3)}`);
  console.log('by function (count over the runs, top 30):');
  for (const [k, v] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`  ${String(v).padStart(5)} ${k}`);
} finally {
  await cluster.stop();
}
