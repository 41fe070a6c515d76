/**
 * `node test/bench/end-memo-miss.ts` (round 49, `end-hop`): what a waited run's pushed end paid to
 * be opened through the gateway's own-seal memo, which never holds an end (its runner sealed it):
 * the memo's key (`<sealed>\0<bind>`, ~160 characters) built and hashed, two Map lookups (young,
 * old) that miss, then the sealer's open — against the sealer's open alone (create-deps.ts
 * `endSealer`, since this round). In one process, the memo filled as a busy gateway's is (its
 * 2,048 entries of submits' sealed programs and descriptions), each of `ROUNDS` rounds (default 9)
 * times `N` opens (default 5,000) of fresh `ended` texts of a trivial run each way, the order
 * alternating round by round (memo first in odd rounds); prints ns an open, p50 over rounds, and
 * in how many rounds the plain open was the cheaper. `GAP_MS` > 0 (default 0) sleeps that long
 * before each open (cold caches as a sequential gateway's, woken by the push; N is then 300).
 */
import { generateSealKey, sealerFromConfig } from '@islet/core';
import { memoizeOwnSeals } from '../../services/gateway/src/own-seal-memo.ts';
import { sealEnded } from '../../services/runs/src/sealed-fields.ts';

const GAP_MS = Number(process.env.GAP_MS ?? 0);
const N = Number(process.env.N ?? (GAP_MS > 0 ? 300 : 5000));
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') }, { ready: 0 });
const memo = memoizeOwnSeals(sealer);
// A busy gateway's memo: submits' `pick` (program and request) and descriptions, 2,048 entries.
for (let i = 0; i < 2048; i++) {
  const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  memo.seal(
    JSON.stringify([`return ${i}`, { style: 'run_code', limits: { timeoutMs: 30000 } }]),
    `pick\0${id}`,
  );
}
const end = {
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: '1',
};
const texts = (n: number) =>
  Array.from({ length: n }, (_, i) => {
    const id = `10000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    return { id, sealed: sealEnded(sealer, id, end) };
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function time(way: 'memo' | 'plain'): Promise<number> {
  const opener = way === 'memo' ? memo : sealer;
  const all = texts(N);
  let ns = 0n;
  for (const { id, sealed } of all) {
    if (GAP_MS > 0) await sleep(GAP_MS);
    const t0 = process.hrtime.bigint();
    opener.open(sealed, `ended\0${id}`);
    ns += process.hrtime.bigint() - t0;
  }
  return Number(ns) / N;
}
const memoNs: number[] = [];
const plainNs: number[] = [];
let plainLower = 0;
await time('memo');
await time('plain');
for (let r = 0; r < ROUNDS; r++) {
  const order: ('memo' | 'plain')[] = r % 2 === 0 ? ['memo', 'plain'] : ['plain', 'memo'];
  const got: Record<string, number> = {};
  for (const way of order) got[way] = await time(way);
  memoNs.push(got.memo as number);
  plainNs.push(got.plain as number);
  if ((got.plain as number) < (got.memo as number)) plainLower++;
}
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `an \`ended\` open (${N} a round, ${ROUNDS} rounds, gap ${GAP_MS} ms): through the memo ${p50(memoNs).toFixed(0)} ns, ` +
    `the sealer alone ${p50(plainNs).toFixed(0)} ns (p50 of rounds); the sealer alone lower in ${plainLower} of ${ROUNDS} rounds; memo hits ${memo.hits}`,
);
