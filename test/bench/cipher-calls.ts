/**
 * Bench-only preload (`BENCH_NODE_FLAGS="--import <abs>/test/bench/cipher-calls.ts"` with
 * `CIPHER_CALLS_DIR` set, e.g. through `seq-cpu.ts`): counts a process's `createCipheriv` and
 * `createDecipheriv` calls by where they were made — in a sealer's restock (`restock`), or at a seal
 * or open on the caller's path (`at the seal`, `at the open`) — and the batches they came in (calls
 * in one synchronous stretch, up to the next microtask checkpoint, are one batch). Written every
 * 2 s and at exit to `CIPHER_CALLS_DIR/ciphers-<pid>.txt` (command line first). Divide by the
 * runs for a run's. The ESM bindings of `node:crypto` are re-synced, so `import { createCipheriv }`
 * sees the counted functions.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { writeFileSync } from 'node:fs';

const dir = process.env.CIPHER_CALLS_DIR;
if (dir) {
  const crypto = createRequire(import.meta.url)('node:crypto') as Record<string, (...a: unknown[]) => unknown>;
  const counts = new Map<string, number>();
  const add = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  let inBatch = false;
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
      if (where === 'restock' && !inBatch) {
        inBatch = true;
        add('restock batches');
        queueMicrotask(() => {
          inBatch = false;
        });
      }
      return real.apply(this, a);
    };
  }
  syncBuiltinESMExports();
  const write = () => {
    const lines = [...counts].sort().map(([k, c]) => `${c} ${k}`);
    writeFileSync(`${dir}/ciphers-${process.pid}.txt`, `${process.argv.join(' ')}\n${lines.join('\n')}\n`);
  };
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
