/**
 * Bench-only preload (`BENCH_NODE_FLAGS="--import <abs>/test/bench/timer-calls.ts"` with
 * `TIMER_CALLS_DIR` set, e.g. through `seq-cpu.ts`): counts a process's `setTimeout`,
 * `clearTimeout`, `setImmediate` and `setInterval` calls, each by its calling stack (six frames),
 * and writes them every 2 s and at exit to `TIMER_CALLS_DIR/timers-<pid>.txt` (its command line first, then
 * `<count> <kind>` and the stack, most frequent first). Divide by the runs for calls a run. Only
 * the global functions are counted (Node's own modules call their internal copies).
 */
import { writeFileSync } from 'node:fs';

const dir = process.env.TIMER_CALLS_DIR;
if (dir) {
  const counts = new Map<string, number>();
  const realSetInterval = setInterval;
  const g = globalThis as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const name of ['setTimeout', 'clearTimeout', 'setImmediate', 'setInterval']) {
    const real = g[name];
    if (!real) continue;
    g[name] = function (this: unknown, ...a: unknown[]) {
      const stack = (new Error().stack ?? '').split('\n').slice(2, 8).join('\n');
      const key = `${name}\n${stack}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return real.apply(this, a);
    };
  }
  const write = () => {
    const lines = [...counts].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${c} ${k}`);
    writeFileSync(`${dir}/timers-${process.pid}.txt`, `${process.argv.join(' ')}\n${lines.join('\n')}\n`);
  };
  realSetInterval(write, 2000).unref();
  process.on('exit', write);
}
