/**
 * `node test/bench/end-open-text.ts` (round 50, `end-turn`): a pushed end's decipher as the sealer's
 * open did it until round 50 — the ciphertext's base64url decoded into a JS Buffer first
 * (`Buffer.from(text, 'base64url')`), then `update(buffer)` — against the decipher decoding the text
 * itself (`update(text, 'base64url')`: the same bytes, decoded in C++ with no Buffer made). The
 * same key, IV, AAD and tag each way, fresh `ended` texts of a trivial run; `ROUNDS` rounds (default
 * 9) of `N` opens each way (default 5,000), the order alternating; `GAP_MS` > 0 sleeps that long
 * before each open (cold caches, as a sequential gateway woken by the push; N is then 300). Prints
 * ns an open, p50 over rounds, and in how many rounds the text's own decode was the cheaper.
 */
import { createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';
import { generateSealKey, sealerFromConfig } from '@islet/core';
import { sealEnded } from '../../services/runs/src/sealed-fields.ts';

const GAP_MS = Number(process.env.GAP_MS ?? 0);
const N = Number(process.env.N ?? (GAP_MS > 0 ? 300 : 5000));
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const keyText = generateSealKey('k1');
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: keyText }, { ready: 0 });
const key = createSecretKey(Buffer.from(keyText.slice(keyText.indexOf(':') + 1), 'base64'));
const end = { result: { _tag: 'Completed' as const, value: 1, logs: [] }, text: '1' };
const ivOf = (s: string) => Buffer.from(s.split('.')[2] as string, 'base64url');
const tagOf = (s: string) => Buffer.from(s.split('.')[3] as string, 'base64url');
function texts(n: number) {
  return Array.from({ length: n }, () => {
    const id = randomBytes(16).toString('hex');
    const sealed = sealEnded(sealer, id, end);
    return {
      id,
      sealed,
      iv: ivOf(sealed),
      tag: tagOf(sealed),
      ct: sealed.slice(sealed.lastIndexOf('.') + 1),
    };
  });
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Way = 'buffer' | 'text';
async function time(way: Way): Promise<number> {
  const all = texts(N);
  let ns = 0n;
  for (const t of all) {
    if (GAP_MS > 0) await sleep(GAP_MS);
    const t0 = process.hrtime.bigint();
    const d = createDecipheriv('aes-256-gcm', key, t.iv);
    d.setAAD(Buffer.from(`k1\0ended\0${t.id}`));
    d.setAuthTag(t.tag);
    const body = way === 'buffer' ? d.update(Buffer.from(t.ct, 'base64url')) : d.update(t.ct, 'base64url');
    const out = Buffer.concat([body, d.final()]).toString('utf8');
    ns += process.hrtime.bigint() - t0;
    if (out.length < 2) throw new Error('not opened');
  }
  return Number(ns) / N;
}
const got: Record<Way, number[]> = { buffer: [], text: [] };
let textLower = 0;
await time('buffer');
await time('text');
for (let r = 0; r < ROUNDS; r++) {
  const order: Way[] = r % 2 === 0 ? ['buffer', 'text'] : ['text', 'buffer'];
  const round: Partial<Record<Way, number>> = {};
  for (const way of order) round[way] = await time(way);
  got.buffer.push(round.buffer as number);
  got.text.push(round.text as number);
  if ((round.text as number) < (round.buffer as number)) textLower++;
  console.log(
    `round ${r + 1} (${order.join(' then ')}): buffer ${round.buffer?.toFixed(0)} ns, text ${round.text?.toFixed(0)} ns`,
  );
}
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `GAP_MS=${GAP_MS} N=${N}: buffer first ${p50(got.buffer).toFixed(0)} ns an open, the text decoded by the decipher ${p50(got.text).toFixed(0)} ns (p50 of ${ROUNDS} rounds); the text's own lower in ${textLower} of ${ROUNDS}`,
);
