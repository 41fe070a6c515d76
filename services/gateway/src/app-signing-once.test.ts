/**
 * A binding call's Standard Webhooks signature is two one-shot SHA-256 hashes over the secret's
 * padded blocks, prepared once a secret (core's hmac-once.ts), not an `Hmac` object a call (round
 * 42 `par-cpu`: a hundred-call run's batch made a hundred on the gateway's one thread). The
 * signature is the same: the `standardwebhooks` package verifies it (app-signing.test.ts) and it
 * is `createHmac`'s digest here.
 */
import { describe, expect, it, vi } from 'vitest';

const counted = vi.hoisted(() => ({ hmac: 0, sha256: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    createHmac: (...args: Parameters<typeof real.createHmac>) => {
      counted.hmac++;
      return real.createHmac(...args);
    },
    hash: (...args: Parameters<typeof real.hash>) => {
      if (args[0] === 'sha256') counted.sha256++;
      return real.hash(...args);
    },
  };
});

const real = await vi.importActual<typeof import('node:crypto')>('node:crypto');
const { webhookHeaders } = await import('./app-signing.ts');

describe('a call’s webhook signature', () => {
  it('is two one-shot hashes a secret, no Hmac object, and createHmac’s digest', () => {
    const raw = Buffer.alloc(24, 9);
    const secrets = [`whsec_${raw.toString('base64')}`, `whsec_${Buffer.alloc(24, 3).toString('base64')}`];
    webhookHeaders(secrets, 'warm', '{}', 1_792_486_800_000);
    counted.hmac = 0;
    counted.sha256 = 0;
    const calls = 100;
    const signed = Array.from({ length: calls }, (_, i) =>
      webhookHeaders(secrets, `run_1:${i}`, `{"callIndex":${i},"text":"ünï 🌍"}`, 1_792_486_800_000),
    );
    expect(counted.hmac).toBe(0);
    // Inner and outer hash, for each of the two secrets of a rotation.
    expect(counted.sha256).toBe(2 * 2 * calls);
    const i = 42;
    const message = `run_1:${i}.1792486800.{"callIndex":${i},"text":"ünï 🌍"}`;
    expect(signed[i]?.['webhook-signature']).toBe(
      [raw, Buffer.alloc(24, 3)]
        .map((key) => `v1,${real.createHmac('sha256', key).update(message).digest('base64')}`)
        .join(' '),
    );
  });
});
