/**
 * `node test/bench/seal-memo-cost.ts`: what the gateway run store's own-seal memo
 * (services/gateway/src/own-seal-memo.ts) adds to a submit's seals, and what a read of the run
 * saves or pays (round 50, `gateway-submit`). A submit seals its format-2 `pick` (the program and
 * request, bound to `pick\0<run id>`, ~880 characters here, ~1.2 KB sealed) and its description
 * (unbound); a read opens both. In one process, with the gateway's cipher stock (64 ready, restock
 * below 40: the restock runs in the check phase, so the loop yields every 8 submits, as a gateway's
 * turns do):
 * - `seal`: ns a submit's two seals, the plain sealer against the memo, in `ROUNDS` (default 8)
 *   alternating blocks of `N` (default 20000) submits; and the young-generation collections
 *   (scavenges) and their ms per 10,000 submits (PerformanceObserver `gc`): what the memo keeps
 *   alive is promoted instead of dying young;
 * - `read`: ns to open a just-sealed pick and description, from the memo (a hit) and by the plain
 *   sealer (a miss: two deciphers), hot.
 * ab.sh checks out services/ from the base, so the memo measured is the base's, then the head's.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { createSealer, type Sealer } from '../../services/core/src/sealer.ts';
import { memoizeOwnSeals } from '../../services/gateway/src/own-seal-memo.ts';

const N = Number(process.env.N ?? 20000);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const key = Buffer.alloc(32, 7);
const sealer = createSealer({ keys: { k1: key }, activeKeyId: 'k1', ready: 64, restockBelow: 40 });
const memo = memoizeOwnSeals(sealer);
const code = `export default async function main() {\n  return { ok: true, n: 1 };\n}\n`.repeat(8);
const request = {
  connections: [],
  bindings: [],
  limits: { timeoutMs: 30000, memoryMb: 128 },
  style: 'run_code',
};
const pickText = (i: number) => JSON.stringify([`${code}// ${i}`, request]);
const description = 'Measure a trivial program';

let scavenges = 0;
let scavengeMs = 0;
const gcs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    // kind 1: minor (scavenge), per perf_hooks' `NODE_PERFORMANCE_GC_MINOR`.
    if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === 1) {
      scavenges++;
      scavengeMs += e.duration;
    }
  }
});
gcs.observe({ entryTypes: ['gc'] });

const tick = () => new Promise<void>((r) => setImmediate(r));
let sink = 0;
async function sealBlock(s: Sealer, n: number, from: number): Promise<number> {
  let ns = 0;
  for (let i = 0; i < n; i++) {
    const id = `run-${from + i}`;
    const text = pickText(from + i);
    const t = process.hrtime.bigint();
    const pick = s.seal(text, `pick\0${id}`);
    const desc = s.seal(description);
    ns += Number(process.hrtime.bigint() - t);
    sink += pick.length + desc.length;
    if (i % 8 === 7) await tick();
  }
  return ns / n;
}

const rows: Record<string, { ns: number[]; scav: number[]; scavMs: number[] }> = {
  plain: { ns: [], scav: [], scavMs: [] },
  memo: { ns: [], scav: [], scavMs: [] },
};
let at = 0;
await sealBlock(sealer, N, at);
at += N;
await sealBlock(memo, N, at);
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, s] of (r % 2 === 0
    ? [
        ['plain', sealer],
        ['memo', memo],
      ]
    : [
        ['memo', memo],
        ['plain', sealer],
      ]) as [string, Sealer][]) {
    await tick();
    const s0 = scavenges;
    const m0 = scavengeMs;
    at += N;
    const ns = await sealBlock(s, N, at);
    await tick();
    rows[name]!.ns.push(ns);
    rows[name]!.scav.push(((scavenges - s0) * 10000) / N);
    rows[name]!.scavMs.push(((scavengeMs - m0) * 10000) / N);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, row] of Object.entries(rows))
  console.log(
    `seal ${name}: ${median(row.ns).toFixed(0)} ns a submit (median of ${row.ns.length}; ${row.ns.map((v) => v.toFixed(0)).join(' ')}), scavenges ${median(row.scav).toFixed(1)} / 10k submits, ${median(row.scavMs).toFixed(1)} ms / 10k`,
  );

// A read of a run this gateway just sealed: a hit opens from memory, a miss deciphers both.
const reads = { hit: [] as number[], miss: [] as number[] };
for (let r = 0; r < ROUNDS; r++) {
  const ids = Array.from({ length: 200 }, (_, i) => `read-${r}-${i}`);
  const sealed = ids.map((id, i) => [memo.seal(pickText(i), `pick\0${id}`), memo.seal(description)] as const);
  for (const [name, s] of [
    ['hit', memo],
    ['miss', sealer],
  ] as const) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < ids.length; i++) {
      const [p, d] = sealed[i]!;
      sink +=
        s.open(Buffer.from(p).toString(), `pick\0${ids[i]}`).length +
        s.open(Buffer.from(d).toString()).length;
    }
    reads[name].push(Number(process.hrtime.bigint() - t) / ids.length);
  }
  await tick();
}
console.log(
  `read hit: ${median(reads.hit).toFixed(0)} ns, miss: ${median(reads.miss).toFixed(0)} ns (pick + description; a copy of each sealed text as a Redis read gives; median of ${ROUNDS} × 200); memo hits ${memo.hits}`,
);
gcs.disconnect();
if (sink === 0) console.log('');
