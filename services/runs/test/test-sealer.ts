import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Sealer } from '../src/types.ts';

/**
 * A real AES-256-GCM sealer for tests of this package, so they need not depend on `@islet/core`.
 * Output: `t1.<iv>.<tag>.<ciphertext>` (base64url).
 */
export function createTestSealer(key: Buffer = randomBytes(32)): Sealer {
  return {
    seal(plaintext, bind) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      if (bind !== undefined) cipher.setAAD(Buffer.from(bind));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['t1', iv, cipher.getAuthTag(), body]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.');
    },
    open(sealed, bind) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 't1' || iv === undefined || tag === undefined || body === undefined) {
        throw new Error('not a sealed value');
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      if (bind !== undefined) decipher.setAAD(Buffer.from(bind));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}
