/**
 * `node test/bench/par-micro.ts`: two per-call costs of the gateway in a hot loop (round 29
 * `par-calls`). (1) An App's answer parsed as `parseLosslessJson` parses it now (a plain
 * `JSON.parse`, the reviver only when a number may be lossy) against the reviver parse it always
 * made before, for a small and a 1.3 KB answer. (2) A seal through the own-seal memo in its steady
 * state (full, forgetting as it remembers) at 1024 and 4096 entries, against forgetting one oldest
 * entry a seal (the first key of one Map, as before): the wrapped sealer is a stand-in that costs
 * nothing, so only the memo's own work is timed.
 */

import { parseLosslessJson, parseWithSource } from '../../services/gateway/src/lossless-json.ts';
import { memoizeOwnSeals } from '../../services/gateway/src/own-seal-memo.ts';

const N = Number(process.env.N ?? 100_000);
const time = (name: string, f: (i: number) => unknown) => {
  for (let i = 0; i < N / 5; i++) f(i);
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f(i);
  console.log(`${name.padEnd(58)} ${(Number(process.hrtime.bigint() - t) / N / 1000).toFixed(2)} µs`);
};

// The base's parse (every answer before this round), timed against the plain parse first.
const revived = parseWithSource;
const small = '{"ok":true}';
const big = JSON.stringify({
  items: Array.from({ length: 20 }, (_, i) => ({
    id: i,
    name: `item ${i}`,
    price: i * 1.5,
    tags: ['a', 'b'],
  })),
});
time('answer {"ok":true}, reviver parse (before)', () => revived(small));
time('answer {"ok":true}, parseLosslessJson (now)', () => parseLosslessJson(small));
time(`answer of ${big.length} B, reviver parse (before)`, () => revived(big));
time(`answer of ${big.length} B, parseLosslessJson (now)`, () => parseLosslessJson(big));

let n = 0;
const fake = { seal: (p: string) => `v1.k.${n++}.${p}`, open: (s: string) => s };
for (const entries of [1024, 4096]) {
  const oldest = new Map<string, string>();
  time(`seal through a memo of ${entries}, one oldest forgotten a seal (before)`, (i) => {
    const sealed = fake.seal(`value ${i}`);
    oldest.set(sealed, `value ${i}`);
    while (oldest.size > entries) oldest.delete(oldest.keys().next().value as string);
  });
  const memo = memoizeOwnSeals(fake, { maxEntries: entries });
  time(`seal through a memo of ${entries}, by generations (now)`, (i) => memo.seal(`value ${i}`));
}
