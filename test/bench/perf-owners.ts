/**
 * `node test/bench/perf-owners.ts <file.perf> <runs> [top] [pattern]`: a `perf record -g` of a
 * cluster process's main thread (seq-cpu.ts `PERF=1`, `PERF_WHO=runner`; the file stays in
 * `PROF_DIR`) taken apart by whose code the time is: each sample goes to the innermost JS frame that
 * is not Node's own (`node:…`), so Node's internals (a socket's write, a cipher's making, a timer's
 * insert) and the natives and kernel under them count for the code of ours or of a library that
 * called them; a sample with only Node's frames is "node", one with no JS frame at all (the event
 * loop's poll, the kernel, GC between turns) "no JS". Prints µs a run by owner (our workspaces,
 * bullmq, ioredis with its parser, other packages), by our file, and the `top` functions so charged.
 * With `pattern` (a regular expression over frames) it prints instead where those samples are
 * charged, and the frames directly under the first match (its callees, natives included): e.g.
 * `'sealer.ts:152'` for a decipher's parts, `'Builtin_ObjectDefineProperty'` for who defines
 * properties. Round 39 (`runner-cpu`).
 */
import { execFileSync } from 'node:child_process';
import { PERF_HZ } from './thread-perf.ts';

/** A frame as perf prints it, without its address, offset and object, paths shortened. */
const frameOf = (line: string) =>
  line
    .trim()
    .replace(/^[0-9a-f]+ /, '')
    .replace(/\+0x[0-9a-f]+ \(.*$/, '')
    .replace(/file:\/\/\/.*?\/services\//, 's/')
    .replace(/\/\S*?\/node_modules\//, 'nm/');

/** The owner of a JS frame: our workspace, a package (ioredis with its parser and queue), or Node. */
function ownerOf(frame: string): string | undefined {
  if (!frame.startsWith('JS:')) return undefined;
  if (/ node:/.test(frame)) return 'node';
  const ours = / s\/([\w-]+)\//.exec(frame);
  if (ours) return `ours: ${ours[1]}`;
  const pkg = / nm\/(@[\w.-]+\/[\w.-]+|[\w.-]+)\//.exec(frame);
  if (!pkg) return 'other';
  const name = pkg[1] as string;
  return ['redis-parser', 'denque', 'cluster-key-slot', 'standard-as-callback'].includes(name)
    ? 'ioredis'
    : name;
}

/** Our file of a frame (`runner/src/run-executor.ts`), or undefined. */
const fileOf = (frame: string) => / s\/([\w-]+\/(?:src\/)?[\w./-]+?\.ts)/.exec(frame)?.[1];

function stacks(file: string): string[][] {
  const text = execFileSync('perf', ['script', '-i', file], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const out: string[][] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => /^\s/.test(l) && l.trim());
    if (lines.length > 0) out.push(lines.map(frameOf));
  }
  return out;
}

/** The frame a sample is charged to: its innermost JS frame not Node's own, else its innermost JS frame. */
function chargedFrame(frames: string[]): string | undefined {
  let firstJs: string | undefined;
  for (let i = 0; i < frames.length; i++) {
    const owner = ownerOf(frames[i] as string);
    if (!owner) continue;
    firstJs ??= frames[i];
    if (owner !== 'node') return frames[i];
  }
  return firstJs;
}

function add(map: Map<string, number>, key: string) {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function rows(map: Map<string, number>, us: (n: number) => string, top: number): string {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, n]) => `${us(n)}  ${k.slice(0, 150)}`)
    .join('\n');
}

export function perfOwners(file: string, runs: number, top = 40, pattern?: RegExp, unit = 'run'): string {
  const all = stacks(file);
  const us = (n: number) => ((n * 1e6) / PERF_HZ / runs).toFixed(1).padStart(7);
  if (pattern) {
    const charged = new Map<string, number>();
    const under = new Map<string, number>();
    let n = 0;
    for (const frames of all) {
      const at = frames.findIndex((f) => pattern.test(f));
      if (at < 0) continue;
      n++;
      const above = frames.slice(at + 1).find((f) => f.startsWith('JS:') && !pattern.test(f));
      add(charged, `${frames[at]} ← ${above ?? '(none)'}`);
      add(under, at > 0 ? (frames[at - 1] as string) : '(self)');
    }
    return `${us(n)} µs a ${unit} in samples with a frame matching ${pattern}\n-- the match ← its JS caller\n${rows(charged, us, top)}\n-- directly under it\n${rows(under, us, top)}`;
  }
  const owners = new Map<string, number>();
  const files = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const frames of all) {
    const frame = chargedFrame(frames);
    if (!frame) {
      add(owners, 'no JS (the loop, the kernel, V8)');
      continue;
    }
    add(owners, ownerOf(frame) as string);
    const ours = fileOf(frame);
    if (ours) add(files, ours);
    add(functions, frame.replace(/^JS:[*+~^]?'?/, ''));
  }
  return [
    `${us(all.length)} µs a ${unit} on the CPU (${all.length} samples at ${PERF_HZ} Hz, ${runs} ${unit}s)`,
    `-- by owner (Node's internals charged to their caller)\n${rows(owners, us, 30)}`,
    `-- our files\n${rows(files, us, top)}`,
    `-- functions\n${rows(functions, us, top)}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, runs, top, pattern] = process.argv.slice(2);
  if (!file || !runs) throw new Error('usage: perf-owners.ts <file.perf> <runs> [top] [pattern]');
  console.log(perfOwners(file, Number(runs), Number(top ?? 40), pattern ? new RegExp(pattern) : undefined));
}
