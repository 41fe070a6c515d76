import { createDecipheriv } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSealer, generateSealKey, parseSealKeys, SealError } from './sealer.ts';

// Sealed by the sealer as it was before keys became KeyObjects (raw Buffer keys), under this key.
const OLD_KEY = Buffer.alloc(32, 7);
const OLD_SEALED = 'v1.k1.XaeqN4_433k87sL0.yMsgmq_JhNwl-6cEc-PEWQ.veTjTnMbE-7XsG2g-U35p2_tILbM3dIKzlIdduY';
const OLD_SEALED_EMPTY = 'v1.k1.dL9BpQ_K1MlIsKHA.71lqnzcUqOaO1i8KbOuzbQ.';

describe('sealer with KeyObject keys', () => {
  it('opens what the sealer sealed before its keys were KeyObjects', () => {
    const s = createSealer({ keys: { k1: OLD_KEY }, activeKeyId: 'k1' });
    expect(s.open(OLD_SEALED)).toBe('sealed before KeyObjects: ✓');
    expect(s.open(OLD_SEALED_EMPTY)).toBe('');
  });

  it('round-trips many values with one prepared key, in the v1 format', () => {
    const s = createSealer({ keys: parseSealKeys(generateSealKey('k9')), activeKeyId: 'k9' });
    for (const text of ['', 'a', '{"status":"Running"}', 'x'.repeat(100_000), 'ünïcødé 🌍']) {
      const sealed = s.seal(text);
      expect(sealed).toMatch(/^v1\.k9\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/);
      expect(s.open(sealed)).toBe(text);
    }
  });

  it('rejects a value sealed under another key with the same id, and a relabelled key id', () => {
    const keysA = parseSealKeys(`${generateSealKey('a')},${generateSealKey('b')}`);
    const a = createSealer({ keys: keysA, activeKeyId: 'a' });
    const wrong = createSealer({ keys: parseSealKeys(generateSealKey('a')), activeKeyId: 'a' });
    const sealed = a.seal('secret');
    expect(() => wrong.open(sealed)).toThrow(SealError);
    expect(() => wrong.open(sealed)).toThrow(/failed authentication under key "a"/);
    // The key id is in the AAD: the same bytes under key b's label do not open, even with b's key.
    const relabelled = sealed.replace(/^v1\.a\./, 'v1.b.');
    expect(() => a.open(relabelled)).toThrow(/failed authentication under key "b"/);
  });

  it('binds a text to what it was sealed for: it opens with that bind alone, ready cipher or not', () => {
    for (const ready of [0, 4]) {
      const s = createSealer({ keys: parseSealKeys(generateSealKey('k1')), activeKeyId: 'k1', ready });
      const sealed = s.seal('["code",{}]', 'pick\0run_a');
      expect(s.open(sealed, 'pick\0run_a')).toBe('["code",{}]');
      // Copied to another run's record, or to another field, or read as an unbound field: no open.
      expect(() => s.open(sealed, 'pick\0run_b')).toThrow(/failed authentication/);
      expect(() => s.open(sealed, 'ended\0run_a')).toThrow(/failed authentication/);
      expect(() => s.open(sealed)).toThrow(/failed authentication/);
      // And an unbound text does not open as a bound one (nor an empty bind as none).
      const plain = s.seal('x');
      expect(() => s.open(plain, 'pick\0run_a')).toThrow(/failed authentication/);
      expect(() => s.open(plain, '')).toThrow(/failed authentication/);
      expect(s.open(plain)).toBe('x');
      // The same format and length as an unbound text: the bind is not stored.
      expect(sealed.split('.')).toHaveLength(5);
    }
  });

  it("a bind's AAD is exactly `kid\\0bind` in UTF-8, whatever the binds before it (a kept buffer's bytes)", () => {
    // Round 52 `runner-own` writes a bind's AAD into bytes each key keeps: each seal's AAD checked
    // by a decipher given `kid\0bind` as a Buffer of its own, long and short binds in turn (a
    // longer one before must leave nothing behind), multi-byte ones, and one past the kept room.
    const keys = parseSealKeys(generateSealKey('k1'));
    const key = keys.k1 as Buffer;
    const binds = [
      'pick\0run_long_'.padEnd(120, 'x'),
      'pick\0r',
      'ended\0ünïcødé 🌍',
      'p\0'.padEnd(400, 'y'),
      'a',
    ];
    const openRef = (sealed: string, bind: string): string => {
      const [, kid, iv, tag, ct] = sealed.split('.') as [string, string, string, string, string];
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      d.setAAD(Buffer.from(`${kid}\0${bind}`));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    };
    for (const ready of [0, 4]) {
      const s = createSealer({ keys, activeKeyId: 'k1', ready });
      for (const bind of [...binds, ...binds.toReversed()]) {
        const sealed = s.seal(`text for ${bind.length}`, bind);
        expect(openRef(sealed, bind)).toBe(`text for ${bind.length}`);
        expect(s.open(sealed, bind)).toBe(`text for ${bind.length}`);
        expect(() => s.open(sealed, `${bind}z`)).toThrow(/failed authentication/);
      }
    }
  });

  it('answers an unknown key id, including inherited property names, as a SealError', () => {
    const s = createSealer({ keys: { k1: OLD_KEY }, activeKeyId: 'k1' });
    expect(() => s.open(OLD_SEALED.replace('v1.k1.', 'v1.constructor.'))).toThrow(
      /no seal key "constructor" configured/,
    );
    expect(() => s.open('v2.k1.a.b.c')).toThrow(/not a sealed value/);
  });

  it('refuses bad keys and an active key id that is not listed', () => {
    expect(() => createSealer({ keys: { k1: Buffer.alloc(16) }, activeKeyId: 'k1' })).toThrow(/32 bytes/);
    expect(() => createSealer({ keys: { 'bad id': OLD_KEY }, activeKeyId: 'bad id' })).toThrow(/must match/);
    expect(() => createSealer({ keys: { k1: OLD_KEY }, activeKeyId: 'k2' })).toThrow(/not among the keys/);
  });
});
