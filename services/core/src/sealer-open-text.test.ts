/**
 * An open decodes its ciphertext's text inside the decipher (round 50 `end-turn`): no Buffer of the
 * text is made and dropped, and what it opens and refuses is as before — the stored form, the
 * authentication and its errors unchanged.
 */
import { createDecipheriv, createSecretKey } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSealer, generateSealKey, parseSealKeys, SealError } from './sealer.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

const sealer = () => createSealer({ keys: parseSealKeys(generateSealKey('k1')), activeKeyId: 'k1' });
const ciphertextOf = (sealed: string) => sealed.slice(sealed.lastIndexOf('.') + 1);

describe('sealer open', () => {
  it('makes no Buffer of the ciphertext text', () => {
    const s = sealer();
    const texts = ['[{"_tag":"Completed","value":1,"logs":[]},0]', 'x'.repeat(10_000), 'ünïcødé 🌍'];
    const sealed = texts.map((t) => s.seal(t, `ended\0run-${t.length}`));
    const from = vi.spyOn(Buffer, 'from');
    const opened = sealed.map((v, i) => s.open(v, `ended\0run-${texts[i]?.length}`));
    expect(opened).toEqual(texts);
    const ofCiphertext = from.mock.calls.filter((c) => sealed.some((v) => c[0] === ciphertextOf(v)));
    expect(ofCiphertext).toEqual([]);
  });

  it('refuses a changed ciphertext, a changed bind and an empty ciphertext, as before', () => {
    const s = sealer();
    const sealed = s.seal('the end', 'ended\0r1');
    const ct = ciphertextOf(sealed);
    const head = sealed.slice(0, sealed.length - ct.length);
    const flipped = `${head}${ct[0] === 'A' ? 'B' : 'A'}${ct.slice(1)}`;
    expect(s.open(sealed, 'ended\0r1')).toBe('the end');
    expect(() => s.open(flipped, 'ended\0r1')).toThrow(SealError);
    expect(() => s.open(sealed, 'ended\0r2')).toThrow(SealError);
    expect(() => s.open(`${head}`, 'ended\0r1')).toThrow(SealError);
  });

  it('opens or refuses a ciphertext text as a Buffer.from decode of it did (loose base64url too)', () => {
    const keyText = generateSealKey('k1');
    const s = createSealer({ keys: parseSealKeys(keyText), activeKeyId: 'k1' });
    const key = createSecretKey(Buffer.from(keyText.slice(keyText.indexOf(':') + 1), 'base64'));
    // eb99e4b0's decode: the text made a Buffer by `Buffer.from`, then deciphered.
    const before = (sealed: string, bind: string): string => {
      const [, , iv, tag, ct] = sealed.split('.') as [string, string, string, string, string];
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      d.setAAD(Buffer.from(`k1\0${bind}`));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    };
    const outcome = (open: () => string) => {
      try {
        return open();
      } catch {
        return 'refused';
      }
    };
    const sealed = s.seal('the run ended: 42', 'ended\0r1');
    const ct = ciphertextOf(sealed);
    const head = sealed.slice(0, sealed.length - ct.length);
    const texts = [
      ct,
      `${ct}!!`,
      `${ct}==`,
      `${ct.slice(0, 4)} ${ct.slice(4)}`,
      ct.replace(/-/g, '+').replace(/_/g, '/'),
      `${ct}A`,
      ct.slice(0, -1),
      `=${ct}`,
    ];
    for (const text of texts) {
      const want = outcome(() => before(`${head}${text}`, 'ended\0r1'));
      expect(
        outcome(() => s.open(`${head}${text}`, 'ended\0r1')),
        text,
      ).toBe(want);
    }
    expect(outcome(() => s.open(`${head}${ct}!!`, 'ended\0r1'))).toBe('the run ended: 42');
  });
});
