import { createDecipheriv } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SealError as BaseSealError, createSealer as createBaseSealer } from '../test/sealer-a0565cd2.ts';
import { createSealer, SealError } from './sealer.ts';

// The sealer's texts against a0565cd2's sealer (the previous release, copied verbatim in
// ../test/sealer-a0565cd2.ts): each opens what the other seals, under every key, bind and size, and
// a text is what AES-256-GCM gives for its IV, key id and bind, as a0565cd2 computes it.
const keys = { k0: Buffer.alloc(32, 9), k1: Buffer.alloc(32, 7) };
const BIND = 'ended\0run_01JFZ8K4T1WJ0QX2M3N4P5R6S7';
const TEXTS = [
  '',
  'a',
  'ab',
  'abc',
  '{"ok":true,"value":12}',
  `{"ok":true,"value":"${'x'.repeat(120)}"}`,
  'ünïcødé 🌍 and a lone surrogate \ud800',
  'y'.repeat(2000),
  'z'.repeat(70_000),
];

const b64 = (text: string) => Buffer.from(text, 'base64url');

describe('the sealer against a0565cd2', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('opens what a0565cd2 seals and a0565cd2 opens what it seals, bound or not, ready ciphers or not', () => {
    for (const ready of [0, 3]) {
      for (const activeKeyId of ['k0', 'k1']) {
        const head = createSealer({ keys, activeKeyId, ready });
        const base = createBaseSealer({ keys, activeKeyId, ready });
        for (const text of TEXTS) {
          for (const bind of [undefined, BIND, '', 'pick\0run_x']) {
            const byHead = head.seal(text, bind);
            const byBase = base.seal(text, bind);
            // Same layout and lengths (the IVs differ: fresh each seal).
            expect(byHead.split('.').map((p) => p.length)).toEqual(byBase.split('.').map((p) => p.length));
            expect(base.open(byHead, bind)).toBe(base.open(byBase, bind));
            expect(head.open(byBase, bind)).toBe(base.open(byBase, bind));
            expect(head.open(byHead, bind)).toBe(base.open(byHead, bind));
            // A text opens only with its own bind, in either release.
            const other = bind === undefined ? 'x' : undefined;
            expect(() => base.open(byHead, other)).toThrow(/failed authentication/);
            expect(() => head.open(byBase, other)).toThrow(/failed authentication/);
          }
        }
      }
    }
  });

  it('seals the bytes AES-256-GCM gives under its IV, key and AAD (key id, NUL, bind)', () => {
    const head = createSealer({ keys, activeKeyId: 'k1', ready: 2 });
    for (const text of TEXTS) {
      for (const bind of [undefined, BIND]) {
        const [v, kid, iv, tag, ct] = head.seal(text, bind).split('.') as [
          string,
          string,
          string,
          string,
          string,
        ];
        expect([v, kid]).toEqual(['v1', 'k1']);
        expect([b64(iv).length, b64(tag).length]).toEqual([12, 16]);
        const d = createDecipheriv('aes-256-gcm', keys.k1, b64(iv));
        d.setAAD(Buffer.from(bind === undefined ? 'k1' : `k1\0${bind}`));
        d.setAuthTag(b64(tag));
        expect(Buffer.concat([d.update(b64(ct)), d.final()]).toString('utf8')).toBe(
          Buffer.from(text, 'utf8').toString('utf8'),
        );
        // Node's own encoding of each part: the same text a0565cd2 wrote.
        expect(b64(iv).toString('base64url')).toBe(iv);
        expect(b64(tag).toString('base64url')).toBe(tag);
      }
    }
  });

  it('gives every seal a fresh IV, across pool refills and ready ciphers', () => {
    const head = createSealer({ keys, activeKeyId: 'k1', ready: 5 });
    const seen = new Set<string>();
    for (let i = 0; i < 1500; i++) seen.add(head.seal('same', i % 2 ? BIND : undefined).split('.')[2]!);
    expect(seen.size).toBe(1500);
  });

  it('refuses what a0565cd2 opened though no sealer writes it: a cut tag, another IV length, a non-canonical tag', () => {
    const base = createBaseSealer({ keys, activeKeyId: 'k1' });
    const head = createSealer({ keys, activeKeyId: 'k1' });
    const [, , iv, tag, ct] = base.seal('secret', BIND).split('.') as [
      string,
      string,
      string,
      string,
      string,
    ];
    // GCM checks as many tag bytes as it is given: 12 of 16 open under a0565cd2.
    const cut = `v1.k1.${iv}.${b64(tag).subarray(0, 12).toString('base64url')}.${ct}`;
    expect(base.open(cut, BIND)).toBe('secret');
    expect(() => head.open(cut, BIND)).toThrow(SealError);
    expect(() => head.open(cut, BIND)).toThrow(/failed authentication under key "k1"/);
    // A tag's last character carries 2 bits no byte reads: set, the text is another spelling.
    const last = tag.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = `${tag.slice(0, -1)}${alphabet[alphabet.indexOf(last) | 1]}`;
    const loose = `v1.k1.${iv}.${respelled}.${ct}`;
    expect(base.open(loose, BIND)).toBe('secret');
    expect(() => head.open(loose, BIND)).toThrow(/failed authentication/);
    // A 16-byte IV with its first 12 the real ones fails in both (GCM hashes a longer IV).
    const longIv = `v1.k1.${iv}AAAAA.${tag}.${ct}`;
    expect(() => base.open(longIv, BIND)).toThrow(/failed authentication/);
    expect(() => head.open(longIv, BIND)).toThrow(/failed authentication/);
  });

  it('answers malformed texts as a0565cd2 does, and always as a SealError', () => {
    const base = createBaseSealer({ keys, activeKeyId: 'k1' });
    const head = createSealer({ keys, activeKeyId: 'k1' });
    const good = base.seal('v');
    const [, , iv, tag, ct] = good.split('.') as [string, string, string, string, string];
    for (const text of [
      '',
      'v1',
      'v1.k1',
      `v1.k1.${iv}.${tag}`,
      `v2.k1.${iv}.${tag}.${ct}`,
      `v1.k1.${iv}.${tag}.${ct}.`,
      `x${good}`,
      `v1.nokey.${iv}.${tag}.${ct}`,
      `v1..${iv}.${tag}.${ct}`,
      `v1.k1.${iv}.${tag}.${ct}A`,
      `v1.k1.${iv.slice(1)}.${tag}.${ct}`,
      `v1.k1.${iv}.${tag.slice(1)}.${ct}`,
      `v1.k1.${iv.replace(/^./, '!')}.${tag}.${ct}`,
      `v1.k1..${tag}.${ct}`,
      `v1.k1.${iv}..${ct}`,
    ]) {
      let thrown: unknown;
      try {
        base.open(text);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, text).toBeInstanceOf(Error);
      expect(() => head.open(text), text).toThrow(SealError);
      // a0565cd2's own message where it threw a SealError; where Node's decipher threw (an empty IV:
      // "Invalid initialization vector", not a SealError) the head answers it as a failed open.
      const want =
        thrown instanceof BaseSealError
          ? thrown.message
          : 'sealed value failed authentication under key "k1"';
      expect(() => head.open(text), text).toThrow(want);
    }
  });

  it('encodes a seal’s IV and tag and decodes an open’s without Node’s base64url codec (an open’s ciphertext by its decipher)', () => {
    const head = createSealer({ keys, activeKeyId: 'k1', ready: 4 });
    const sealed = Array.from({ length: 8 }, (_, i) => head.seal(`value ${i}`, i % 2 ? BIND : undefined));
    const toText = vi.spyOn(Buffer.prototype, 'toString');
    const from = vi.spyOn(Buffer, 'from');
    const split = vi.spyOn(String.prototype, 'split');
    for (let i = 0; i < 8; i++) head.seal(`value ${i}`, i % 2 ? BIND : undefined);
    const encodes = toText.mock.calls.filter(([encoding]) => encoding === 'base64url').length;
    for (let i = 0; i < 8; i++) expect(head.open(sealed[i]!, i % 2 ? BIND : undefined)).toBe(`value ${i}`);
    const decodes = (from.mock.calls as unknown[][]).filter(
      ([, encoding]) => encoding === 'base64url',
    ).length;
    // a0565cd2: 3 encodes a seal (IV, tag, ciphertext), 3 decodes an open and a copied IV a cipher;
    // until round 50 (`end-turn`) an open's ciphertext was decoded by `Buffer.from` (8 here), since
    // then by its decipher (`update(text, 'base64url')`).
    expect({ encodes, decodes, splits: split.mock.calls.length }).toEqual({
      encodes: 8,
      decodes: 0,
      splits: 0,
    });
    expect(from.mock.calls.filter(([value]) => Buffer.isBuffer(value))).toHaveLength(0);
  });
});
