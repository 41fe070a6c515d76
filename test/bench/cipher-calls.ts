/**
 * Bench-only preload (`BENCH_NODE_FLAGS="--import <abs>/test/bench/cipher-calls.ts"` with
 * `CIPHER_CALLS_DIR` set, e.g. through `seq-cpu.ts`): counts a process's `createCipheriv` and
 * `createDecipheriv` calls by where they were made — in a sealer's restock (`restock`), or at a seal
 * or open on the caller's path (`at the seal`, `at the open`) — and the batches they came in (calls
 * in one synchronous stretch, up to the next microtask checkpoint, are one batch). Written every
 * 2 s and at exit to `CIPHER_CALLS_DIR/ciphers-<pid>.txt` (command line first). Divide by the
 * runs for a run's. Also each call's own time (`process.hrtime`), p50 and mean by where, a restock's
 * first cipher apart from the rest of its batch. The ESM bindings of `node:crypto` are re-synced, so `import { createCipheriv }`
 * sees the counted functions.
 */

import { writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const dir = process.env.CIPHER_CALLS_DIR;
if (dir) {
  const crypto = createRequire(import.meta.url)('node:crypto') as Record<
    string,
    (...a: unknown[]) => unknown
  >;
  const counts = new Map<string, number>();
  const add = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  let inBatch = false;
  // Each call's own time (ns, the call alone: not the stack taken for `where`).
  const times = new Map<string, number[]>();
  for (const name of ['createCipheriv', 'createDecipheriv']) {
    const real = crypto[name];
    if (!real) continue;
    crypto[name] = function (this: unknown, ...a: unknown[]) {
      const stack = new Error().stack ?? '';
      const where = stack.includes('at restock')
        ? 'restock'
        : name === 'createCipheriv'
          ? 'at the seal'
          : 'at the open';
      add(`${name} ${where}`);
      const first = where === 'restock' && !inBatch;
      if (first) {
        inBatch = true;
        add('restock batches');
        queueMicrotask(() => {
          inBatch = false;
        });
      }
      const t0 = process.hrtime.bigint();
      const made = real.apply(this, a);
      const ns = Number(process.hrtime.bigint() - t0);
      const kind = `${name} ${where}${where === 'restock' ? (first ? ' (first of its batch)' : ' (the rest)') : ''}`;
      const list = times.get(kind) ?? [];
      if (list.length === 0) times.set(kind, list);
      list.push(ns);
      return made;
    };
  }
  syncBuiltinESMExports();
  const write = () => {
    const lines = [...counts].sort().map(([k, c]) => `${c} ${k}`);
    for (const [kind, list] of [...times].sort()) {
      const sorted = [...list].sort((x, y) => x - y);
      const sum = list.reduce((x, y) => x + y, 0);
      const p50 = sorted[Math.floor(sorted.length / 2)] ?? 0;
      lines.push(
        `µs a call, ${kind}: p50 ${(p50 / 1e3).toFixed(1)}, mean ${(sum / list.length / 1e3).toFixed(1)} (${list.length} calls)`,
      );
    }
    writeFileSync(`${dir}/ciphers-${process.pid}.txt`, `${process.argv.join(' ')}\n${lines.join('\n')}\n`);
  };
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
