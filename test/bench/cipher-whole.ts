/**
 * Bench-only preload (`NODE_OPTIONS="--import <abs>/test/bench/cipher-whole.ts"` with
 * `CIPHER_WHOLE_DIR` set, e.g. through `seq-cpu.ts`'s `BENCH_NODE_FLAGS`): times a process's whole
 * AES-GCM operations as the sealer does them, not only the cipher's making (`cipher-calls.ts`):
 * an open from `createDecipheriv` to its `final`'s return; a seal with a cipher made on its path
 * from `createCipheriv` to `getAuthTag`; a seal with a ready cipher (made in a restock) from its
 * first call after the restock's turn (`setAAD` of the bind, or `update`) to `getAuthTag`. Each
 * by whether it was the first of its synchronous stretch (a turn's first: the cold one) or not.
 * Written every 2 s and at exit to `CIPHER_WHOLE_DIR/whole-<pid>.txt` (command line first), p50
 * and mean in µs. A bench-side candidate, `CIPHER_WARM=1`: two check-phase hops after a turn
 * that sealed or opened, one throw-away seal and open under a throw-away key (what a product
 * warm-up would do), its own time listed apart. `CIPHER_KEY=buffer`: the ciphers are given the
 * key's bytes instead of the sealer's KeyObject.
 */

import { writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const dir = process.env.CIPHER_WHOLE_DIR;
if (dir) {
  const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
  const real = {
    createCipheriv: crypto.createCipheriv,
    createDecipheriv: crypto.createDecipheriv,
  };
  const times = new Map<string, number[]>();
  const add = (kind: string, ns: number) => {
    const list = times.get(kind) ?? [];
    if (list.length === 0) times.set(kind, list);
    list.push(ns);
  };
  // A turn's first operation: none other since the last microtask checkpoint.
  let inStretch = false;
  const firstOfStretch = () => {
    if (inStretch) return false;
    inStretch = true;
    queueMicrotask(() => {
      inStretch = false;
    });
    return true;
  };
  const now = () => Number(process.hrtime.bigint());
  const WARM = process.env.CIPHER_WARM === '1';
  const BUFFER_KEY = process.env.CIPHER_KEY === 'buffer';
  const warmKey = crypto.randomBytes(32);
  const warmIv = crypto.randomBytes(12);
  const warmAad = Buffer.from('warm');
  let warming = false;
  let warmDue = false;
  const warmNow = () => {
    warming = true;
    const t0 = now();
    try {
      const c = real.createCipheriv('aes-256-gcm', warmKey, warmIv);
      c.setAAD(warmAad);
      const ct = c.update('{"warm":true}', 'utf8');
      c.final();
      const tag = c.getAuthTag();
      const d = real.createDecipheriv('aes-256-gcm', warmKey, warmIv);
      d.setAAD(warmAad);
      d.setAuthTag(tag);
      d.update(ct);
      d.final();
    } finally {
      warming = false;
      warmDue = false;
    }
    add('warm-up (throw-away seal + open)', now() - t0);
  };
  const scheduleWarm = () => {
    if (!WARM || warmDue) return;
    warmDue = true;
    setImmediate(() => setImmediate(warmNow));
  };
  const keyOf = (key: unknown) =>
    BUFFER_KEY && key && typeof key === 'object' && 'export' in key
      ? (key as import('node:crypto').KeyObject).export()
      : key;
  const inRestock = () => (new Error().stack ?? '').includes('at restock');

  (crypto as Record<string, unknown>).createDecipheriv = (
    alg: string,
    key: unknown,
    iv: unknown,
    o?: unknown,
  ) => {
    if (warming) return (real.createDecipheriv as Function)(alg, key, iv, o);
    const first = firstOfStretch();
    const t0 = now();
    const d = (real.createDecipheriv as Function)(alg, keyOf(key), iv, o);
    add(`createDecipheriv alone${first ? ' (first of its turn)' : ''}`, now() - t0);
    const final = d.final;
    d.final = function (...a: unknown[]) {
      try {
        return final.apply(this, a);
      } finally {
        add(`open, whole${first ? ' (first of its turn)' : ' (not first)'}`, now() - t0);
        scheduleWarm();
      }
    };
    return d;
  };
  (crypto as Record<string, unknown>).createCipheriv = (
    alg: string,
    key: unknown,
    iv: unknown,
    o?: unknown,
  ) => {
    if (warming) return (real.createCipheriv as Function)(alg, key, iv, o);
    const restock = inRestock();
    const t0 = now();
    const c = (real.createCipheriv as Function)(alg, keyOf(key), iv, o);
    if (restock) add('createCipheriv in a restock', now() - t0);
    let start = restock ? 0 : t0;
    let first = restock ? false : firstOfStretch();
    let ready = !restock;
    if (restock) queueMicrotask(() => (ready = true));
    const mark = () => {
      if (ready && start === 0) {
        first = firstOfStretch();
        start = now();
      }
    };
    for (const m of ['setAAD', 'update'] as const) {
      const f = c[m];
      c[m] = function (...a: unknown[]) {
        mark();
        return f.apply(this, a);
      };
    }
    const tag = c.getAuthTag;
    c.getAuthTag = function (...a: unknown[]) {
      try {
        return tag.apply(this, a);
      } finally {
        add(
          `seal, whole, ${restock ? 'ready cipher' : 'cipher made at the seal'}${first ? ' (first of its turn)' : ' (not first)'}`,
          now() - start,
        );
        scheduleWarm();
      }
    };
    return c;
  };
  syncBuiltinESMExports();
  const write = () => {
    const lines: string[] = [];
    for (const [kind, list] of [...times].sort()) {
      const sorted = [...list].sort((x, y) => x - y);
      const sum = list.reduce((x, y) => x + y, 0);
      const at = (q: number) => ((sorted[Math.floor(sorted.length * q)] ?? 0) / 1e3).toFixed(1);
      lines.push(
        `µs, ${kind}: p50 ${at(0.5)}, p90 ${at(0.9)}, mean ${(sum / list.length / 1e3).toFixed(1)} (${list.length})`,
      );
    }
    writeFileSync(`${dir}/whole-${process.pid}.txt`, `${process.argv.join(' ')}\n${lines.join('\n')}\n`);
  };
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
