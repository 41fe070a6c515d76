/**
 * `node --single-threaded test/bench/seal-memo-count.ts`, for callgrind (`seal-memo-count.sh`): the
 * instructions of a submit's two seals through the gateway run store's sealer, or of a read's two
 * opens, counted not timed (round 50, `gateway-submit`). A submit seals its format-2 `pick` (bound
 * to `pick\0<run id>`, ~880 characters, ~1.2 KB sealed) and its description (unbound) with the
 * gateway's cipher stock (64 ready, restock below 40), yielding every 8 submits so the restock runs
 * as in a gateway's turns. `WARM` (default 3000) submits through `SIDE`'s sealer first, then `N`:
 * - `MODE=seal` (default): `N` more submits; `SIDE` `memo` (own-seal-memo.ts at `MEMO` — default
 *   this tree's — as create-deps.ts wraps the run store's sealer) or `plain` (the sealer alone);
 * - `MODE=read`: `N` opens of a pick and a description sealed through the memo in the warm-up
 *   (each a fresh copy, as a Redis read gives): `SIDE` `memo` (hits) or `plain` (two deciphers).
 */
import { pathToFileURL } from 'node:url';
import { createSealer, type Sealer } from '../../services/core/src/sealer.ts';

type Memoize = (s: Sealer) => Sealer & { hits: number };
const N = Number(process.env.N ?? 0);
const WARM = Number(process.env.WARM ?? 3000);
const SIDE = process.env.SIDE ?? 'memo';
const MODE = process.env.MODE ?? 'seal';
const memoPath =
  process.env.MEMO ?? new URL('../../services/gateway/src/own-seal-memo.ts', import.meta.url).pathname;
const { memoizeOwnSeals } = (await import(pathToFileURL(memoPath).href)) as { memoizeOwnSeals: Memoize };

const sealer = createSealer({
  keys: { k1: Buffer.alloc(32, 7) },
  activeKeyId: 'k1',
  ready: 64,
  restockBelow: 40,
});
const memo = memoizeOwnSeals(sealer);
const sealing = MODE === 'seal' && SIDE === 'plain' ? sealer : memo;
const code = `export default async function main() {\n  return { ok: true, n: 1 };\n}\n`.repeat(8);
const request = {
  connections: [],
  bindings: [],
  limits: { timeoutMs: 30000, memoryMb: 128 },
  style: 'run_code',
};
const description = 'Measure a trivial program';
const tick = () => new Promise<void>((r) => setImmediate(r));

let sink = 0;
const kept: [string, string, string][] = [];
async function submits(from: number, n: number) {
  for (let i = from; i < from + n; i++) {
    const id = `run-${i}`;
    const pick = sealing.seal(JSON.stringify([`${code}// ${i}`, request]), `pick\0${id}`);
    const desc = sealing.seal(description);
    if (i >= WARM - 200 && i < WARM) kept.push([id, pick, desc]);
    sink += pick.length + desc.length;
    if (i % 8 === 7) await tick();
  }
}

await submits(0, WARM);
if (MODE === 'seal') await submits(WARM, N);
else {
  const opener = SIDE === 'plain' ? sealer : memo;
  for (let i = 0; i < N; i++) {
    const [id, pick, desc] = kept[i % kept.length]!;
    sink += opener.open(Buffer.from(pick).toString(), `pick\0${id}`).length;
    sink += opener.open(Buffer.from(desc).toString()).length;
    if (i % 8 === 7) await tick();
  }
  if (SIDE === 'memo' && memo.hits !== 2 * N) throw new Error(`hits ${memo.hits}, not ${2 * N}`);
}
if (sink === 0) console.log('');
