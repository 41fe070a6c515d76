/**
 * The gateway's small caches forget their oldest entries without walking a Map. Forgetting one
 * entry at a time with `map.delete(map.keys().next().value)` made every insert past the bound step
 * over the holes V8 leaves at the front of a Map's table (hundreds at 1,000 entries, thousands at
 * 10,000: test/bench/README.md, rounds 28 and 29). Each check fills a cache past its bound with
 * `Map.prototype.keys` watched: the base called it once an insert once full.
 */
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSealer } from '@islet/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { signatureOf } from './app-signing.ts';
import { createArgumentCheck } from './argument-check.ts';
import { memoizeOwnSeals } from './own-seal-memo.ts';

const keys = () => vi.spyOn(Map.prototype, 'keys');
afterEach(() => vi.restoreAllMocks());

describe('bounded caches', () => {
  it("signing keys: past the bound, no walk; every signature still the secret's HMAC", () => {
    const watched = keys();
    const secrets = Array.from(
      { length: 600 },
      (_, i) => `whsec_${Buffer.from(`secret-${i}`).toString('base64')}`,
    );
    const signatures = secrets.map((s) => signatureOf(s, 'msg', 1, '{}'));
    expect(watched).not.toHaveBeenCalled();
    const i = 599;
    const raw = Buffer.from(`secret-${i}`);
    expect(signatures[i]).toBe(`v1,${createHmac('sha256', raw).update('msg.1.{}').digest('base64')}`);
    // Asked again (remembered or made anew), the same signature.
    expect(signatureOf(secrets[0] ?? '', 'msg', 1, '{}')).toBe(signatures[0]);
  });

  it('compiled argument schemas: past the bound, no walk; a remembered schema still checks', () => {
    const check = createArgumentCheck();
    const schema = (i: number) => ({ type: 'object', required: [`f${i}`] });
    const watched = keys();
    for (let i = 0; i < 600; i++) expect(check(schema(i), { [`f${i}`]: 1 })).toBe(undefined);
    expect(watched).not.toHaveBeenCalled();
    expect(check(schema(599), {})).toEqual([{ path: 'arguments.f599', message: 'is required' }]);
    expect(check(schema(0), {})).toEqual([{ path: 'arguments.f0', message: 'is required' }]);
  });

  it('own seals: past the bound, no walk; the oldest generation forgotten first', () => {
    const inner = createSealer({ keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: 'k1' });
    let opened = 0;
    const memo = memoizeOwnSeals({
      seal: (p) => inner.seal(p),
      open: (s) => {
        opened++;
        return inner.open(s);
      },
    });
    const watched = keys();
    const sealed = Array.from({ length: 3000 }, (_, i) => memo.seal(`text ${i}`));
    expect(watched).not.toHaveBeenCalled();
    // Two generations of half its 2,048 bound: the last 1,024 are always remembered, nothing
    // from further back than 2,048 seals is.
    expect(memo.open(sealed[2999] ?? '')).toBe('text 2999');
    expect(memo.open(sealed[3000 - 1024] ?? '')).toBe(`text ${3000 - 1024}`);
    expect(opened).toBe(0);
    expect(memo.open(sealed[3000 - 2049] ?? '')).toBe(`text ${3000 - 2049}`);
    expect(opened).toBe(1);
  });

  it('no cache in the services forgets its oldest through a new Map iterator', () => {
    const root = join(import.meta.dirname, '..', '..');
    const offenders: string[] = [];
    for (const service of readdirSync(root)) {
      const src = join(root, service, 'src');
      let files: string[];
      try {
        files = readdirSync(src, { recursive: true }) as string[];
      } catch {
        continue;
      }
      for (const f of files) {
        if (!f.endsWith('.ts') || f.endsWith('.test.ts')) continue;
        const text = readFileSync(join(src, f), 'utf8');
        if (/\.keys\(\)\.next\(\)/.test(text)) offenders.push(`${service}/src/${f}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
