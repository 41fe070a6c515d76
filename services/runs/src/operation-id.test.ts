/**
 * Operation ids are contract strings (an App sees them, a replay re-derives them): the one-shot
 * `crypto.hash` derivation gives exactly the ids of the RFC 9562 UUIDv5 construction through
 * `createHash` (the previous code, kept here as the reference), and the fixed ids of known calls.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { operationIdFor } from './operation-id.ts';

const NAMESPACE = Buffer.from('6f1d2c3a9b7e4f08a1c5d3e2b4a69780', 'hex');
function reference(runId: string, index: number): string {
  const digest = createHash('sha1').update(NAMESPACE).update(`${runId}:${index}`).digest();
  const b = Buffer.from(digest.subarray(0, 16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

describe('operationIdFor', () => {
  it('keeps the ids it always gave', () => {
    expect(operationIdFor('8f1c', 1)).toBe('21f9496f-959b-5727-9b5d-989c73a99a52');
    expect(operationIdFor('r_01JABCDEF', 0)).toBe('8073bc4e-d8f7-5d02-b189-ee4da825b515');
    expect(operationIdFor('ünï', 12345)).toBe('d25d99cf-0775-54e9-92ec-dac3b8644d4e');
  });

  it('is the createHash UUIDv5 for any run id and index (non-ASCII, long, empty)', () => {
    const runs = ['', 'a', 'r_0123456789abcdef', 'ünï✓', '\u0000x', 'x'.repeat(300), '🚀run'];
    for (const run of runs)
      for (const index of [0, 1, 7, 99, 100_000, 2 ** 31, Number.MAX_SAFE_INTEGER])
        expect(operationIdFor(run, index), `${run}:${index}`).toBe(reference(run, index));
  });
});
