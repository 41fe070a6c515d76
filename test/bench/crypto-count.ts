/**
 * Preloaded into a process (`--import`, by `end-crypto.ts`): counts its AES-GCM cipher and
 * decipher constructions (`createCipheriv`, `createDecipheriv`: one a seal, one an open), and on
 * SIGUSR2 writes the counts so far to `$BENCH_CRYPTO_DIR/<pid>.json`. Named imports of
 * `node:crypto` see the wrapped functions (`syncBuiltinESMExports`), so must load after this.
 * `openUs`: each decipher's µs from its construction to its `final` since the last write (round 37).
 * `onSpot`: ciphers made by a seal itself (its caller's path) rather than by the sealer's restock
 * after the turn (core's sealer.ts `ready`), told apart by the stack (`restock` in it).
 */
import crypto from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const counts = { ciphers: 0, deciphers: 0, onSpot: 0 };
const cipher = crypto.createCipheriv;
const decipher = crypto.createDecipheriv;
crypto.createCipheriv = ((...args: Parameters<typeof cipher>) => {
  counts.ciphers++;
  if (!new Error().stack?.includes('restock')) counts.onSpot++;
  return cipher(...args);
}) as typeof cipher;
/** µs from each decipher's construction to its `final` (an open's work, bar its base64 decode). */
const openUs: number[] = [];
crypto.createDecipheriv = ((...args: Parameters<typeof decipher>) => {
  counts.deciphers++;
  const t0 = performance.now();
  const d = decipher(...args);
  const final = d.final.bind(d);
  d.final = ((...a: []) => {
    const out = final(...a);
    if (openUs.length < 100_000) openUs.push((performance.now() - t0) * 1000);
    return out;
  }) as typeof d.final;
  return d;
}) as typeof decipher;
syncBuiltinESMExports();
const dir = process.env.BENCH_CRYPTO_DIR;
if (dir)
  process.on('SIGUSR2', () => {
    writeFileSync(`${dir}/${process.pid}.json`, JSON.stringify({ ...counts, openUs: openUs.splice(0) }));
  });
