/**
 * `node test/bench/runner-callgrind-report.ts <callgrind.out> <perf-PID.map> <runs> [top]` (round 52
 * `runner-own`; `runner-callgrind.ts` calls `report`): one callgrind dump's instructions a run by
 * function, self and inclusive, top `top` of each. Callgrind names JIT'd code by its address
 * (`0x…`); those are looked up in V8's `--perf-basic-prof` map (`JS:*name file:line` ranges) and
 * summed by name (a function's interpreted, baseline and optimised code objects are one row).
 * Inclusive is self plus the calls' costs as callgrind wrote them, calls to itself left out (a
 * function reached again through another counts that call again: read inclusive for our own
 * functions, not V8's call builtins).
 */
import { readFileSync } from 'node:fs';

interface Range {
  start: number;
  end: number;
  name: string;
}

function loadMap(file: string): Range[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: Range[] = [];
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (!m) continue;
    const start = Number.parseInt(m[1] as string, 16);
    out.push({ start, end: start + Number.parseInt(m[2] as string, 16), name: m[3] as string });
  }
  // Later entries win for a reused range (code freed and its space reused): sort stable by start.
  return out.sort((a, b) => a.start - b.start);
}

function lookup(ranges: Range[], addr: number): string | undefined {
  let lo = 0;
  let hi = ranges.length - 1;
  let found: Range | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid] as Range;
    if (r.start <= addr) {
      found = r;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  // The nearest start at or below; walk back over entries that also cover it (the last written wins).
  if (found && addr < found.end) return found.name;
  for (let i = lo - 2; i >= 0 && i >= lo - 50; i--) {
    const r = ranges[i] as Range;
    if (r.start <= addr && addr < r.end) return r.name;
  }
  return undefined;
}

/** `JS:*foo file:///…/services/runner/src/x.ts:12:3` → `foo runner/src/x.ts:12`. */
function tidy(name: string): string {
  return name
    .replace(/^(JS|Builtin|BytecodeHandler|Function|LazyCompile|Script|RegExp|Stub|Handler):[*~^+]?/, '$1 ')
    .replace(/file:\/\/\S*\/(services|node_modules)\/(\S+?):(\d+)(:\d+)?/, '$2:$3')
    .replace(/^JS /, '');
}

/**
 * V8's own work that a run's code does not ask for by itself: the compilers (tier-up and lazy
 * compiles, which a longer warm-up takes out) and the collector (which the run's allocations do ask
 * for, in lumps: a mark-compact lands in one window and not the next). Each counted where it is
 * entered from outside its group (the caller is not one of its own functions): approximate, read
 * it as a guide; the totals and the named functions are the counts.
 */
const GC_ROOT =
  /^v8::internal::(Heap::(CollectGarbage|StartIncrementalMarking|CollectAllGarbage)\(|IncrementalMarkingJob::Task::|ScavengeJob::Task::|MinorGCJob::Task::|MemoryReducer::TimerTask::|IncrementalMarking::(AdvanceOnAllocation|Step)\()/;
const GC_INSIDE = /Heap|Marking|Scaveng|Sweep|GarbageColl|MemoryReducer|Evacuat|heap::base/;
const COMPILE_ROOT =
  /^v8::internal::Runtime_(CompileLazy|Optimize|CompileOptimized|InstallBaselineCode|CompileBaseline|BytecodeBudgetInterrupt|HealOptimizedCodeSlot)/;
const EVENT =
  /^v8::internal::(Runtime_OptimizeMaglevEager|Runtime_OptimizeTurbofanEager|Runtime_NotifyDeoptimized|Runtime_CompileLazy|Runtime_InstallBaselineCode|Heap::Scavenge|Heap::MarkCompact)\(/;
const COMPILE_INSIDE = /Runtime_|Compiler|maglev::|compiler::|baseline::|TieringManager/;

export function report(file: string, mapFile: string, runs: number, top = 20): string {
  const ranges = loadMap(mapFile);
  const names = new Map<string, string>();
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let summary = 0;
  const resolve = (spec: string): string => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    let raw = spec;
    if (m) {
      if (m[2] !== undefined) names.set(m[1] as string, m[2]);
      raw = names.get(m[1] as string) ?? spec;
    }
    // Callgrind's recursion depth mark (`'2`): one row a function.
    raw = raw.replace(/'\d+$/, '');
    if (/^0x[0-9a-f]+$/.test(raw)) {
      const hit = lookup(ranges, Number.parseInt(raw.slice(2), 16));
      return hit ? tidy(hit) : 'JIT (unnamed)';
    }
    return raw;
  };
  let fn = '';
  let callee = '';
  let inCall = false;
  let gc = 0;
  let compile = 0;
  let calleeGc = false;
  let calleeCompile = false;
  let fnGc = false;
  let fnCompile = false;
  // Calls of V8's events worth a count (compiles, deopts, collections) over the window.
  const events = new Map<string, number>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) {
      fn = resolve(line.slice(3));
      fnGc = GC_INSIDE.test(fn);
      fnCompile = COMPILE_INSIDE.test(fn);
      continue;
    }
    if (line.startsWith('cfn=')) {
      callee = resolve(line.slice(4));
      calleeGc = GC_ROOT.test(callee);
      calleeCompile = COMPILE_ROOT.test(callee);
      continue;
    }
    if (line.startsWith('calls=')) {
      const event = EVENT.exec(callee)?.[1];
      if (event) events.set(event, (events.get(event) ?? 0) + Number(line.slice(6, line.indexOf(' '))));
      inCall = true;
      continue;
    }
    if (line.startsWith('summary:')) summary = Number(line.split(/\s+/)[1]);
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      const parts = line.split(' ');
      const ir = Number(parts[1] ?? 0);
      if (!inCall) self.set(fn, (self.get(fn) ?? 0) + ir);
      // A call to itself (recursion, or two code objects of one function) is already in its rows.
      if (!inCall || callee !== fn) incl.set(fn, (incl.get(fn) ?? 0) + ir);
      if (inCall && calleeGc && !fnGc && !fnCompile) gc += ir;
      if (inCall && calleeCompile && !fnCompile && !fnGc) compile += ir;
      inCall = false;
    }
  }
  let total = 0;
  let jit = 0;
  let unnamed = 0;
  for (const [name, v] of self) {
    total += v;
    if (name === 'JIT (unnamed)') unnamed += v;
    else if (!name.includes('[') && /\.(ts|js|mjs):\d+/.test(name)) jit += v;
  }
  const k = (v: number) => (v / runs / 1000).toFixed(1).padStart(8);
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, v]) => `${k(v)} k  ${name.slice(0, 140)}`)
      .join('\n');
  return [
    `total ${k(summary || total)} k instructions a run: collector ${k(gc)} k, compilers ${k(compile)} k, the rest ${k((summary || total) - gc - compile)} k (JS functions' own code ${k(jit)} k, JIT unnamed ${k(unnamed)} k)`,
    `events in the window: ${[...events].map(([e, n]) => `${e.replace(/^Runtime_|^Heap::/, '')} ${n}`).join(', ')}`,
    `-- self (k a run)\n${rows(self)}`,
    `-- inclusive (k a run)\n${rows(incl)}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, map, runs, top] = process.argv.slice(2);
  console.log(report(file as string, map as string, Number(runs), Number(top ?? 20)));
}
