/**
 * `node test/bench/cipher-cold.mjs <gap> [rounds]`: what makes a sealer's open cold. Each round
 * waits out a gap, then opens one sealed value as `core/src/sealer.ts` does (split, three base64url
 * decodes, `createDecipheriv` with a KeyObject, the key id's AAD and a bind's, the tag, `update`,
 * `final`, the text) and at once a second one; prints the first's and the second's p50/p90 (µs)
 * and the first's steps' p50. The gaps:
 *   `none`      no gap: both opens in the turn that made the last two (hot, a loop)
 *   `immediate` a `setImmediate` turn between rounds (a turn, no idle)
 *   `sleep`     a 1 ms timer: the process idles in `epoll_wait` and the vCPU halts (a run's gap)
 *   `spin`      2 ms of arithmetic on a few registers, then a `setImmediate` (time, no halt)
 *   `idle:<µs>` the thread blocked that long in a futex wait (`Atomics.wait`), then a `setImmediate`
 *   `trash`     4 MB written at a 64-byte stride, then a `setImmediate` (evicted caches, no halt)
 * In `sleep` the previous round's two opens came right before the idle: they are what a warm-up
 * made in the process's idle time after a turn would be, so the first open here is what a real
 * open after such a warm-up costs. `KEY=buffer` gives the ciphers the key's bytes, not a KeyObject.
 * Round 41 `warm-cipher` (test/bench/README.md).
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';

const gap = process.argv[2] ?? 'sleep';
const ROUNDS = Number(process.argv[3] ?? 2000);
const raw = randomBytes(32);
const key = process.env.KEY === 'buffer' ? raw : createSecretKey(raw);
const aad = Buffer.from('k1');
const bind = 'pick\0run-0123456789abcdef';
const plain = JSON.stringify(['return 1 + 1', { connections: [], bindings: [], limits: { wallMs: 5000 } }]);
const iv0 = randomBytes(12);
const c = createCipheriv('aes-256-gcm', key, iv0);
c.setAAD(aad);
c.setAAD(Buffer.from(`\0${bind}`));
const ct0 = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
const sealed = `v1.k1.${iv0.toString('base64url')}.${c.getAuthTag().toString('base64url')}.${ct0.toString('base64url')}`;

// ONE_AAD=1: the key id's AAD and the bind's given in one `setAAD` (GCM hashes the AAD's bytes as
// one stream, so the tag is the same).
const ONE_AAD = process.env.ONE_AAD === '1';
const now = () => Number(process.hrtime.bigint());
const STEPS = [
  'split + base64url',
  'createDecipheriv',
  'setAAD × 2',
  'setAuthTag',
  'update',
  'final',
  'toString',
];
/** One open as the sealer's, with each step's end time in `t` (ns). */
function open(t) {
  t[0] = now();
  const [, , iv, tag, ct] = sealed.split('.');
  const ivBytes = Buffer.from(iv, 'base64url');
  const tagBytes = Buffer.from(tag, 'base64url');
  const ctBytes = Buffer.from(ct, 'base64url');
  t[1] = now();
  const d = createDecipheriv('aes-256-gcm', key, ivBytes);
  t[2] = now();
  if (ONE_AAD) d.setAAD(Buffer.from(`k1\0${bind}`));
  else {
    d.setAAD(aad);
    d.setAAD(Buffer.from(`\0${bind}`));
  }
  t[3] = now();
  d.setAuthTag(tagBytes);
  t[4] = now();
  const head = d.update(ctBytes);
  t[5] = now();
  const tail = d.final();
  t[6] = now();
  const text = (tail.length === 0 ? head : Buffer.concat([head, tail])).toString('utf8');
  t[7] = now();
  if (text !== plain) throw new Error('opened wrong');
}

const pool = Buffer.alloc(4 << 20);
const futex = new Int32Array(new SharedArrayBuffer(4));
async function waitGap() {
  if (gap === 'none') return;
  if (gap === 'sleep') return new Promise((r) => setTimeout(r, 1));
  if (gap.startsWith('idle:')) Atomics.wait(futex, 0, 0, Number(gap.slice(5)) / 1000);
  else if (gap === 'spin') {
    const end = Date.now() + 2;
    let x = 0;
    while (Date.now() < end) for (let k = 0; k < 1000; k++) x = (x * 31 + k) | 0;
    globalThis.sink = x;
  } else if (gap === 'trash') {
    for (let i = 0; i < pool.length; i += 64) pool[i]++;
  } else if (gap !== 'immediate') throw new Error(`unknown gap ${gap}`);
  return new Promise((r) => setImmediate(r));
}

const first = [];
const second = [];
const steps = STEPS.map(() => []);
// ONE_OPEN=1: no second open a round (a profile of the first alone: `perf record -g`).
const ONE_OPEN = process.env.ONE_OPEN === '1';
const t = new Array(8).fill(0);
const u = new Array(8).fill(0);
for (let i = 0; i < ROUNDS + 200; i++) {
  await waitGap();
  open(t);
  if (ONE_OPEN) u.fill(0);
  else open(u);
  if (i < 200) continue;
  first.push(t[7] - t[0]);
  second.push(u[7] - u[0]);
  for (let k = 0; k < STEPS.length; k++) steps[k].push(t[k + 1] - t[k]);
}
const at = (list, q) => (list.sort((a, b) => a - b)[Math.floor(list.length * q)] / 1e3).toFixed(1);
console.log(
  `gap ${gap}, key ${process.env.KEY === 'buffer' ? 'Buffer' : 'KeyObject'}, ${ROUNDS} rounds: ` +
    `first open p50 ${at(first, 0.5)} p90 ${at(first, 0.9)} µs | second p50 ${at(second, 0.5)} p90 ${at(second, 0.9)}`,
);
console.log(`  first open's steps, p50 µs: ${STEPS.map((s, k) => `${s} ${at(steps[k], 0.5)}`).join(' | ')}`);
