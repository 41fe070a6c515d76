/**
 * `node test/bench/seal-ab.ts <base-rev>`: core's sealer.ts of `<base-rev>` and of the work tree,
 * loaded side by side in one process and alternated (base, head, head, base … ROUNDS times), each
 * doing a run's four sealer calls on a run's values N times: the pick-up's two opens (program,
 * request) and the end's two seals (result, text), each seal making its cipher (no stock: what a
 * restock makes is the same work, only moved). ns a run's four, each side's median, and how many
 * of the ABBA groups put the head lower. Warm code: it shows the sealer's own steps, not the cold
 * cost a run's path pays (test/bench/README.md, round 39 `sealer`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const base = process.argv[2] ?? 'HEAD';
const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const dir = mkdtempSync(join(tmpdir(), 'seal-ab-'));
const baseFile = join(dir, 'sealer-base.ts');
writeFileSync(baseFile, execFileSync('git', ['show', `${base}:services/core/src/sealer.ts`]));
type Mod = typeof import('../../services/core/src/sealer.ts');
const sides: Record<string, Mod> = {
  base: (await import(baseFile)) as Mod,
  head: (await import('../../services/core/src/sealer.ts')) as Mod,
};
rmSync(dir, { recursive: true });

const keys = { k1: Buffer.alloc(32, 9) };
const code = `export default async () => { const r = await fetch('x'); return ${'1 + '.repeat(40)}1; }`;
const request = JSON.stringify({
  style: 'run_code',
  limits: { memoryMb: 64, timeoutMs: 30000 },
  connections: [],
  bindings: [],
  submittedBy: 'key_0123456789abcdef',
});
const result = JSON.stringify({ _tag: 'Completed', value: 42, logs: [{ level: 'log', text: 'hello' }] });
const text = 'hello\n42';

function side(mod: Mod): number {
  const s = mod.createSealer({ keys, activeKeyId: 'k1' });
  const sealedCode = s.seal(code);
  const sealedRequest = s.seal(request);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    if (s.open(sealedCode) !== code || s.open(sealedRequest) !== request) throw new Error('opened wrong');
    s.seal(result);
    s.seal(text);
  }
  return Number(process.hrtime.bigint() - t0) / N;
}

const got: Record<string, number[]> = { base: [], head: [] };
for (let r = 0; r < ROUNDS; r++)
  for (const name of r % 2 === 0 ? ['base', 'head', 'head', 'base'] : ['head', 'base', 'base', 'head'])
    got[name]!.push(side(sides[name]!));
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
console.log(`a run's four sealer calls, ns, N=${N}, ${ROUNDS} ABBA groups`);
for (const name of ['base', 'head'])
  console.log(
    `${name}: median ${median(got[name]!).toFixed(0)}  all ${got[name]!.map((v) => v.toFixed(0)).join(' ')}`,
  );
let lower = 0;
for (let g = 0; g < ROUNDS; g++) {
  const b = got.base![2 * g]! + got.base![2 * g + 1]!;
  const h = got.head![2 * g]! + got.head![2 * g + 1]!;
  if (h < b) lower++;
}
console.log(`head lower in ${lower} of ${ROUNDS} groups`);
