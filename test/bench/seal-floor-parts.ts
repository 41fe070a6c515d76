/**
 * `node test/bench/seal-floor-parts.ts`: core's sealer, a seal or an open of one size, `N` times
 * (default 2000) after `WARM` (default 2000) in one process, in a0565cd2's form
 * (`PART=<op>-<size>-before`, services/core/test/sealer-a0565cd2.ts, verbatim) or the head's
 * (`-after`). Ops: `seal`, `sealb` (with a bind, as the pick and ended fields), `open`, `openb`.
 * Sizes: the plaintext's bytes (40: a call's arguments; 120: its outcome; 400: its `call` event or
 * a run's pick; 2000). No stock (`ready` 0): each seal makes its cipher, which is the work a
 * restock does for it off the path, so the count is the process's whole cost a seal. Counted, not
 * timed: run under callgrind with `N=0` and `N=<n>` and take the difference over n
 * (`seal-floor-parts.sh`); without valgrind it prints ns a call too (a hint only).
 */
import { createSealer } from '../../services/core/src/sealer.ts';
import { createSealer as createBaseSealer } from '../../services/core/test/sealer-a0565cd2.ts';

const N = Number(process.env.N ?? 2000);
const WARM = Number(process.env.WARM ?? 2000);
const PART = process.env.PART ?? 'seal-120-after';
const [op = '', sizeText = '', form = ''] = PART.split('-');
const size = Number(sizeText);
if (!['seal', 'sealb', 'open', 'openb'].includes(op) || !(size > 0) || !['before', 'after'].includes(form)) {
  throw new Error('PART must be <seal|sealb|open|openb>-<bytes>-<before|after>');
}
const keys = { k1: Buffer.alloc(32, 7), k0: Buffer.alloc(32, 9) };
const sealer = (form === 'before' ? createBaseSealer : createSealer)({ keys, activeKeyId: 'k1' });
// JSON-like text of `size` bytes with a few non-ASCII characters, as a call's outcome may carry.
const plain = `{"ok":true,"value":"${'abcdefghij'.repeat(size).slice(0, Math.max(0, size - 24))}é"}`;
const bind = op.endsWith('b') ? 'ended\0run_01JFZ8K4T1WJ0QX2M3N4P5R6S7' : undefined;
// 100 texts to open, sealed by the other form, so every open reads the other release's bytes.
const other = (form === 'before' ? createSealer : createBaseSealer)({ keys, activeKeyId: 'k1' });
const texts = Array.from({ length: 100 }, (_, i) => other.seal(`${plain}${i % 10}`, bind));

const step: (i: number) => number = op.startsWith('seal')
  ? (i) => sealer.seal(i % 2 ? plain : `${plain}x`, bind).length
  : (i) => sealer.open(texts[i % 100]!, bind).length;
let sink = 0;
for (let i = 0; i < WARM; i++) sink += step(i);
const t = process.hrtime.bigint();
for (let i = 0; i < N; i++) sink += step(i);
const ns = Number(process.hrtime.bigint() - t) / Math.max(1, N);
console.log(`${PART} N=${N} ${ns.toFixed(0)} ns a call (a time: a hint only) ${sink > 0 ? '' : '!'}`);
