import { createHash } from 'node:crypto';

/** Fixed namespace for Islet operation ids (a random UUID chosen once; never change it). */
const NAMESPACE = Buffer.from('6f1d2c3a9b7e4f08a1c5d3e2b4a69780', 'hex');

/**
 * A UUIDv5 (RFC 9562, SHA-1 name-based) of `<runId>:<index>`: every gateway and every replay
 * derives the same operation id for the same call without storing or coordinating anything.
 */
export function operationIdFor(runId: string, index: number): string {
  const hash = createHash('sha1').update(NAMESPACE).update(`${runId}:${index}`).digest();
  const b = Buffer.from(hash.subarray(0, 16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The `Idempotency-Key` an App receives for a call: the same for the same (run, index), forever. */
export function idempotencyKeyFor(runId: string, index: number): string {
  return `${runId}:${index}`;
}
