/**
 * Bench-only preload (`NODE_OPTIONS="--import <abs>/test/bench/tail-log.ts"` with `TAIL_LOG_DIR`
 * set; round 36, `tail`): every process it reaches (the bench, the gateway, the runner; a sandbox
 * host only where its environment is given it: `engine-tail.ts`'s `hostEnv`) appends to `TAIL_LOG_DIR/tail-<pid>.jsonl`, as
 * `{ who, kind, label, t, ms }` on the stage stamps' clock (core's `wallNow`: the offset read at an
 * edge of `Date.now()`, not `performance.timeOrigin`, which a preempted start leaves off by ms):
 * - each V8 collection (`kind` scavenge / mark-compact / incremental / weakcb; what `--trace-gc`
 *   prints), its start and length;
 * - each callback of a `setTimeout` of `TAIL_LOG_TIMER_MIN_MS` (default 20) or more, and of every
 *   `setInterval`, as it runs (`kind` timeout / interval, `label` the callback's name or the start
 *   of its source): the processes' periodic work (heartbeats, lease renewals, recovery ticks,
 *   BullMQ's stalled-jobs check and lock extension), its start and its synchronous length.
 * Buffered and written every 2 s (the log's own writes then land on a run's path only rarely).
 */
import { appendFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

const dir = process.env.TAIL_LOG_DIR;

/** Wall clock minus `performance.now()`, read right after `Date.now()` turns (as core's `wallNow`). */
function anchor(): number {
  let best = Number.NEGATIVE_INFINITY;
  for (let k = 0; k < 8; k++) {
    let was = Date.now();
    let before = performance.now();
    for (;;) {
      const wall = Date.now();
      const after = performance.now();
      if (wall !== was) {
        if (after - before < 0.02) best = Math.max(best, wall - after);
        break;
      }
      was = wall;
      before = after;
    }
  }
  return Number.isFinite(best) ? best : performance.timeOrigin;
}

if (dir) {
  const script = process.argv[1] ?? '';
  const who = /gateway\/src\/main/.test(script)
    ? 'gateway'
    : /runner\/src\/main/.test(script)
      ? 'runner'
      : /test\/bench/.test(script)
        ? 'bench'
        : /engine\/(src|dist)\/(host\/)?host\.[jt]s$/.test(script)
          ? 'host'
          : 'other';
  const offset = anchor();
  const minMs = Number(process.env.TAIL_LOG_TIMER_MIN_MS ?? 20);
  const file = `${dir}/tail-${process.pid}.jsonl`;
  const gcKinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  let lines: string[] = [];
  const flush = () => {
    if (lines.length === 0) return;
    try {
      appendFileSync(file, lines.join(''));
    } catch {
      // the bench removed its directory: nothing reads these any more
    }
    lines = [];
  };
  const log = (kind: string, label: string, start: number, ms: number, newSpace?: number) =>
    lines.push(`${JSON.stringify({ who, kind, label, t: offset + start, ms, newSpace })}\n`);
  // The young generation's size as V8 reports it at each collection (`new_space`'s space_size,
  // round 47 `tail-gc`): which semi-space a process really ran with, read back, not assumed.
  const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = gcKinds[(e as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'gc-other';
      log(kind, '', e.startTime, e.duration, kind === 'scavenge' ? newSpace() : undefined);
    }
  }).observe({ entryTypes: ['gc'] });
  const labelOf = (fn: (...a: unknown[]) => unknown) =>
    fn.name || String(fn).slice(0, 90).replace(/\s+/g, ' ');
  const wrap = (kind: string, fn: unknown) => {
    if (typeof fn !== 'function') return fn;
    const f = fn as (...a: unknown[]) => unknown;
    return function (this: unknown, ...a: unknown[]) {
      const start = performance.now();
      try {
        return f.apply(this, a);
      } finally {
        log(kind, labelOf(f), start, performance.now() - start);
      }
    };
  };
  const g = globalThis as unknown as Record<string, (...a: unknown[]) => unknown>;
  const realTimeout = g.setTimeout!;
  const realInterval = g.setInterval!;
  g.setTimeout = function (this: unknown, fn: unknown, delay?: unknown, ...rest: unknown[]) {
    const long = typeof delay === 'number' && delay >= minMs;
    return realTimeout.call(this, long ? wrap('timeout', fn) : fn, delay, ...rest);
  };
  g.setInterval = function (this: unknown, fn: unknown, delay?: unknown, ...rest: unknown[]) {
    return realInterval.call(this, wrap('interval', fn), delay, ...rest);
  };
  // util.promisify's own forms (`setTimeout[util.promisify.custom]`) kept.
  for (const [name, real] of [
    ['setTimeout', realTimeout],
    ['setInterval', realInterval],
  ] as const)
    for (const sym of Object.getOwnPropertySymbols(real))
      Object.defineProperty(g[name]!, sym, Object.getOwnPropertyDescriptor(real, sym)!);
  (realInterval(flush, 2000) as NodeJS.Timeout).unref();
  process.on('exit', flush);
}
