/**
 * The request an `http` App receives, built once per call: the connection's sealed headers and
 * signing secrets are opened once per ciphertext (not once per call), and what is signed and sent
 * stays exactly what a fresh open gives, rotations and expiries included.
 */
import { randomBytes } from 'node:crypto';
import { createSealer, type Sealer } from '@islet/core';
import type { CallSource, StoredRun } from '@islet/runs';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { appRequest } from './app-request.ts';
import { newSigningSecret, sealSigning } from './app-signing.ts';
import type { Connection } from './connections.ts';

function countingSealer(): Sealer & { opens: number } {
  const inner = createSealer({ keys: { k1: randomBytes(32) }, activeKeyId: 'k1' });
  const counted = {
    opens: 0,
    seal: (text: string) => inner.seal(text),
    open: (sealed: string) => {
      counted.opens++;
      return inner.open(sealed);
    },
  };
  return counted;
}

const run = { id: 'run-1', tenant: 'dev', session: 's' } as unknown as StoredRun;
const source: CallSource = { connectionId: 'c1', connectionName: 'Shop', name: 'ping', kind: 'tool' };
const connectionWith = (sealer: Sealer, signing: Parameters<typeof sealSigning>[1]) =>
  ({
    id: 'c1',
    name: 'Shop',
    kind: 'http',
    url: 'http://app.test/',
    sealedHeaders: sealer.seal(JSON.stringify({ 'x-api-key': 'k' })),
    sealedSigning: sealSigning(sealer, signing),
  }) as unknown as Connection;
const callOf = (index: number) => ({ index, binding: 'shop.ping', argsJson: `{"n":${index}}` });
const ctxOf = (index: number) => ({ idempotencyKey: `run-1:${index}`, operationId: `op-${index}` });
const verify = (secret: string, req: { text: string; headers: Record<string, string> }) =>
  new Webhook(secret.slice('whsec_'.length)).verify(req.text, req.headers);

describe('appRequest', () => {
  it("opens a connection's headers and secrets once, however many calls it serves", () => {
    const sealer = countingSealer();
    const secret = newSigningSecret();
    const connection = connectionWith(sealer, { current: secret });
    for (let i = 0; i < 5; i++) {
      const req = appRequest(sealer, run, callOf(i), source, connection, ctxOf(i));
      expect(req.headers['x-api-key']).toBe('k');
      expect(req.headers['idempotency-key']).toBe(`run-1:${i}`);
      expect(verify(secret, req)).toMatchObject({ arguments: { n: i } });
    }
    expect(sealer.opens).toBe(2);
  });

  it('signs with a rotated secret at once, and stops using a previous one when it expires', () => {
    const sealer = countingSealer();
    const [old, fresh] = [newSigningSecret(), newSigningSecret()];
    const now = Date.now();
    const before = appRequest(
      sealer,
      run,
      callOf(0),
      source,
      connectionWith(sealer, { current: old }),
      ctxOf(0),
      now,
    );
    expect(verify(old, before)).toBeTruthy();
    const rotated = connectionWith(sealer, {
      current: fresh,
      previous: { secret: old, expiresAt: now + 60_000 },
    });
    const during = appRequest(sealer, run, callOf(1), source, rotated, ctxOf(1), now);
    expect(during.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(verify(fresh, during)).toBeTruthy();
    expect(verify(old, during)).toBeTruthy();
    const after = appRequest(sealer, run, callOf(2), source, rotated, ctxOf(2), now + 120_000);
    expect(after.headers['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(verify(fresh, after)).toBeTruthy();
    expect(() => verify(old, after)).toThrow();
  });
});
