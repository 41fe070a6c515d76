/**
 * Self time of a `.cpuprofile` by file (node_modules folded to their package) and by function,
 * per run when a run count is given; `node test/bench/profile-summary.ts <file> [function]`
 * prints the summary, or with a function name the call stacks its self time comes from.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

/** Monotonic µs (the clock of a `.cpuprofile`'s `startTime` and of `process.hrtime` on Linux). */
export type Window = readonly [fromUs: number, toUs: number];

const short = (url: string) => url.replace(/.*node_modules\//, 'nm/').replace(/.*services\//, 's/');

function load(file: string, window?: Window) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const d = profile.timeDeltas[i] ?? 0;
    at += d;
    if (window && (at < window[0] || at > window[1])) return;
    total += d;
    self.set(id, (self.get(id) ?? 0) + d);
  });
  return { profile, byId, self, total };
}

/** `window`: only the samples taken in it (the bench's measured runs), `runs` then its runs. */
export function summarize(file: string, runs = 0, top = 30, window?: Window): string {
  const { byId, self, total } = load(file, window);
  const byFn = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const [id, us] of self) {
    const f = byId.get(id)?.callFrame;
    if (!f) continue;
    const where = short(f.url);
    const pkg = where.startsWith('nm/')
      ? where
          .split('/')
          .slice(0, where.startsWith('nm/@') ? 3 : 2)
          .join('/')
      : where || f.functionName;
    byFn.set(
      `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber}`,
      (byFn.get(`${f.functionName || '(anonymous)'} ${where}:${f.lineNumber}`) ?? 0) + us,
    );
    byFile.set(pkg, (byFile.get(pkg) ?? 0) + us);
  }
  const lines = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([k, us]) =>
          `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%` +
          `${runs ? ` ${(us / 1000 / runs).toFixed(3).padStart(7)} ms/run` : ''}  ${k}`,
      )
      .join('\n');
  return `total ${(total / 1000).toFixed(0)} ms\n${lines(byFile)}\n--- by function\n${lines(byFn)}`;
}

export function callersOf(file: string, fn: string, depth = 10): string {
  const { profile, byId, self } = load(file);
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stacks = new Map<string, number>();
  for (const n of profile.nodes) {
    const us = self.get(n.id) ?? 0;
    if (n.callFrame.functionName !== fn || us === 0) continue;
    const path: string[] = [];
    for (let p = parent.get(n.id); p !== undefined && path.length < depth; p = parent.get(p)) {
      const f = byId.get(p)?.callFrame;
      if (f) path.push(`${f.functionName || '?'}@${short(f.url).split('/').pop()}:${f.lineNumber}`);
    }
    stacks.set(path.join(' < '), (stacks.get(path.join(' < ')) ?? 0) + us);
  }
  return [...stacks]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([k, us]) => `${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
    .join('\n');
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Bytes allocated a run by site (function) and by file, from a sampling heap profile (alloc-sampler.ts). */
export function summarizeAllocations(file: string, runs: number, top = 30): string {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const byFn = new Map<string, number>();
  const byFile = new Map<string, number>();
  // The site with its two callers (round 38): a survivor's site alone (a Promise, a closure) rarely
  // says whose object it is.
  const byStack = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode, callers: string[]) => {
    const f = n.callFrame;
    const where = short(f.url);
    const fn = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + n.selfSize);
    byFile.set(where || f.functionName, (byFile.get(where || f.functionName) ?? 0) + n.selfSize);
    const stack = [fn, ...callers.slice(0, 2)].join(' ← ');
    if (n.selfSize) byStack.set(stack, (byStack.get(stack) ?? 0) + n.selfSize);
    total += n.selfSize;
    for (const c of n.children) walk(c, [fn, ...callers]);
  };
  walk(head, []);
  const lines = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, bytes]) => `${(bytes / runs).toFixed(0).padStart(8)} B/run  ${k}`)
      .join('\n');
  return `${(total / runs).toFixed(0)} B allocated a run (sampled)\n${lines(byFile)}\n--- by function\n${lines(byFn)}\n--- by function ← its callers\n${lines(byStack)}`;
}

/**
 * Who allocates at a site: the bytes a run of every function named `fn` in a sampling heap profile,
 * by the chain of frames that called it (`depth` of them), e.g. `next` (iterator results) by the
 * loop or spread that walked the iterator.
 */
export function allocationCallersOf(file: string, fn: string, runs: number, depth = 2, top = 25): string {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const by = new Map<string, number>();
  const name = (f: HeapNode['callFrame']) =>
    `${f.functionName || '?'}@${short(f.url).split('/').pop()}:${f.lineNumber}`;
  const walk = (n: HeapNode, path: HeapNode['callFrame'][]) => {
    if (n.callFrame.functionName === fn && n.selfSize > 0) {
      const key = path.slice(-depth).reverse().map(name).join(' < ');
      by.set(key, (by.get(key) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, [...path, n.callFrame]);
  };
  walk(head, []);
  const total = [...by.values()].reduce((a, b) => a + b, 0);
  return (
    `${fn}: ${(total / runs).toFixed(0)} B/run (sampled), by caller\n` +
    [...by]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, bytes]) => `${(bytes / runs).toFixed(0).padStart(8)} B/run  ${k}`)
      .join('\n')
  );
}

/**
 * `perf script` output (with call chains) as µs a run by each sample's innermost JS frame, or its
 * top frame when it has none (the event loop, the kernel's side of a poll), and the total.
 */
export function summarizePerfScript(text: string, runs: number, hz: number, top = 40): string {
  const by = new Map<string, number>();
  let samples = 0;
  const frame = (line: string) =>
    line
      .trim()
      .replace(/^[0-9a-f]+ /, '')
      .replace(/\+0x[0-9a-f]+ \(.*$/, '')
      .replace(/file:\/\/\/.*?\/services\//, 's/')
      .replace(/\/.*?\/node_modules\//, 'nm/');
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => /^\s/.test(l) && l.trim());
    if (lines.length === 0) continue;
    samples++;
    const frames = lines.map(frame);
    const js = frames.find((f) => f.startsWith('JS:'));
    const key = js ?? `(native) ${frames.find((f) => !/kallsyms/.test(f)) ?? frames[0]}`;
    by.set(key, (by.get(key) ?? 0) + 1);
  }
  const us = (n: number) => ((n * 1e6) / hz / runs).toFixed(1).padStart(7);
  const rows = [...by]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, n]) => `${us(n)}  ${k.slice(0, 160)}`);
  return `${us(samples)} µs a run on the CPU\n${rows.join('\n')}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, fn] = process.argv.slice(2);
  if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [function]');
  console.log(fn ? callersOf(file, fn) : summarize(file));
}
