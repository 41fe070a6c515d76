/**
 * `node test/bench/seq-prof.ts <file.cpuprofile> [top]`: a V8 CPU profile (`seq-prof-preload.mjs`)
 * summed by function: self and inclusive share of the samples that were not idle, top `top`
 * (default 40) by self, then by inclusive. Round 34, `seq-path`.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = process.argv[2];
if (!file) throw new Error('usage: seq-prof.ts <file.cpuprofile> [top]');
const top = Number(process.argv[3] ?? 40);
const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[] };
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n: Node) =>
  `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/(services|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
const idle = new Set(['(idle)', '(program)', '(garbage collector)']);
const self = new Map<string, number>();
const incl = new Map<string, number>();
let busy = 0;
let gc = 0;
for (const id of p.samples) {
  const n = byId.get(id)!;
  if (n.callFrame.functionName === '(garbage collector)') gc++;
  if (idle.has(n.callFrame.functionName)) continue;
  busy++;
  self.set(name(n), (self.get(name(n)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const k = name(byId.get(at)!);
    if (seen.has(k)) continue;
    seen.add(k);
    incl.set(k, (incl.get(k) ?? 0) + 1);
  }
}
console.log(
  `${p.samples.length} samples, ${busy} in JS or native callees (${((busy / p.samples.length) * 100).toFixed(1)} %), GC ${gc}`,
);
const show = (m: Map<string, number>, label: string) => {
  console.log(`by ${label}, % of busy samples:`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${((v / busy) * 100).toFixed(2).padStart(6)}  ${k}`);
};
show(self, 'self');
show(incl, 'inclusive');
