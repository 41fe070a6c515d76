/**
 * Where a seal's and an open's time goes (bench only, no Redis): each step of core's sealer.ts
 * done alone in a warm loop, ns a step (median of ROUNDS rounds of N each), on values the size of
 * a run's request. Warm: the steps' shares, not the cold cost on a run's path (round 39 `sealer`).
 *   node test/bench/seal-parts.ts            (N=20000 ROUNDS=7)
 */
import {
  type CipherGCM,
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  randomBytes,
  randomFillSync,
} from 'node:crypto';

const N = Number(process.env.N ?? 20000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const key = createSecretKey(randomBytes(32));
const aad = Buffer.from('k1');
const plain = JSON.stringify({
  connections: [],
  bindings: [],
  style: 'run_code',
  limits: { memoryMb: 64, timeoutMs: 30000, cpuMs: 10000 },
  timeBudget: 'wall',
  submittedBy: 'key_0123456789abcdef',
});
const iv0 = randomBytes(12);
const c0 = createCipheriv('aes-256-gcm', key, iv0);
c0.setAAD(aad);
const ct0 = Buffer.concat([c0.update(plain, 'utf8'), c0.final()]);
const tag0 = c0.getAuthTag();
const sealed = `v1.k1.${iv0.toString('base64url')}.${tag0.toString('base64url')}.${ct0.toString('base64url')}`;
const [, , ivT, tagT, ctT] = sealed.split('.') as [string, string, string, string, string];
const pool = Buffer.alloc(12 * 512);
randomFillSync(pool);

let sink: unknown;
const steps: Record<string, () => void> = {
  'open: split': () => {
    sink = sealed.split('.');
  },
  'open: 3 base64url decodes': () => {
    sink = [Buffer.from(ivT, 'base64url'), Buffer.from(tagT, 'base64url'), Buffer.from(ctT, 'base64url')];
  },
  'open: createDecipheriv': () => {
    sink = createDecipheriv('aes-256-gcm', key, iv0);
  },
  'open: createDecipheriv+setAAD+setAuthTag': () => {
    const d = createDecipheriv('aes-256-gcm', key, iv0);
    d.setAAD(aad);
    d.setAuthTag(tag0);
    sink = d;
  },
  'open: whole (decipher, update, final, utf8)': () => {
    const d = createDecipheriv('aes-256-gcm', key, iv0);
    d.setAAD(aad);
    d.setAuthTag(tag0);
    const a = d.update(ct0);
    d.final();
    sink = a.toString('utf8');
  },
  'open: as sealer.ts does it': () => {
    const parts = sealed.split('.');
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[2]!, 'base64url'));
    d.setAAD(aad);
    d.setAuthTag(Buffer.from(parts[3]!, 'base64url'));
    const a = d.update(Buffer.from(parts[4]!, 'base64url'));
    d.final();
    sink = a.toString('utf8');
  },
  'seal: iv from pool (subarray, copy, fill)': () => {
    const iv = Buffer.from(pool.subarray(0, 12));
    pool.fill(0, 0, 12);
    sink = iv;
  },
  'seal: createCipheriv+setAAD (ready-made)': () => {
    const c = createCipheriv('aes-256-gcm', key, iv0);
    c.setAAD(aad);
    sink = c;
  },
  'seal: update+final+getAuthTag': (() => {
    const made: CipherGCM[] = [];
    return () => {
      if (made.length === 0)
        for (let i = 0; i < 256; i++) {
          const c = createCipheriv('aes-256-gcm', key, iv0);
          c.setAAD(aad);
          made.push(c);
        }
      const c = made.pop()!;
      sink = [c.update(plain, 'utf8'), c.final(), c.getAuthTag()];
    };
  })(),
  'seal: 3 base64url encodes + template': () => {
    sink = `v1.k1.${iv0.toString('base64url')}.${tag0.toString('base64url')}.${ct0.toString('base64url')}`;
  },
};

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const results = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, fn] of Object.entries(steps)) {
    // The restocking step pre-makes outside the timed loop share; close enough for its order of size.
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) fn();
    const ns = Number(process.hrtime.bigint() - t0) / N;
    (results.get(name) ?? results.set(name, []).get(name)!).push(ns);
  }
}
void sink;
console.log(
  `plaintext ${plain.length} B, sealed ${sealed.length} chars; N=${N} ROUNDS=${ROUNDS}; median ns a step`,
);
for (const [name, a] of results) console.log(`${median(a).toFixed(0).padStart(7)}  ${name}`);
