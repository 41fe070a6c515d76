/**
 * Bench-only preload (`NODE_OPTIONS="--import <abs>/test/bench/gc-log.ts"` with `GC_LOG_DIR` set):
 * every process it reaches (the bench itself, the gateway, the runner; not the sandbox hosts,
 * whose environment is their own) appends its V8 garbage collections, on the wall clock, to
 * `GC_LOG_DIR/gc-<pid>.jsonl` as `{ who, kind, t, ms }` (`t`: start, ms since the epoch). Node's
 * `gc` performance entries are what `--trace-gc` prints, but stamped on the same clock as a run's
 * stamps, so `sequential.ts TAIL=1` can lay them against each run's send and receipt.
 * Buffered and written every 2 s, so the log's own writes land on no run's path but rarely.
 * `GC_LOG_SPACES=1` adds `young`: the new spaces' sizes (`getHeapSpaceStatistics`) as each entry is read.
 */
import { appendFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

const dir = process.env.GC_LOG_DIR;
if (dir) {
  const script = process.argv[1] ?? '';
  const who = /gateway/.test(script)
    ? 'gateway'
    : /runner/.test(script)
      ? 'runner'
      : /test\/bench/.test(script)
        ? 'bench'
        : script.split('/').slice(-3).join('/');
  const file = `${dir}/gc-${process.pid}.jsonl`;
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  let lines: string[] = [];
  const flush = () => {
    if (lines.length === 0) return;
    appendFileSync(file, lines.join(''));
    lines = [];
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = kinds[(e as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      const t = performance.timeOrigin + e.startTime;
      // Round 46 (`par-calls`): the young generation's size as the entry is read (after the
      // collection), so a log says whether scavenges follow the semi-space's size.
      let young: Record<string, number> | undefined;
      if (process.env.GC_LOG_SPACES === '1') {
        young = {};
        for (const sp of getHeapSpaceStatistics())
          if (sp.space_name.startsWith('new')) young[sp.space_name] = sp.space_size;
      }
      lines.push(`${JSON.stringify({ who, kind, t, ms: e.duration, ...(young ? { young } : {}) })}\n`);
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(flush, 2000).unref();
  process.on('exit', flush);
}
