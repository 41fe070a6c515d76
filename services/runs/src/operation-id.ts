import { hash } from 'node:crypto';

/** Fixed namespace for Islet operation ids (a random UUID chosen once; never change it). */
const NAMESPACE = Buffer.from('6f1d2c3a9b7e4f08a1c5d3e2b4a69780', 'hex');

/**
 * A UUIDv5 (RFC 9562, SHA-1 name-based) of `<runId>:<index>`: every gateway and every replay
 * derives the same operation id for the same call without storing or coordinating anything.
 */
export function operationIdFor(runId: string, index: number): string {
  // One-shot `hash`, not a `Hash` object fed twice: the gateway derives one a binding call, a
  // hundred a 100-call run's batch on its one thread (round 40 `par-calls`). The same digest of
  // the same bytes (namespace, then the name's UTF-8), written into one buffer (no buffer of the
  // name alone and no concatenation; round 42 `par-cpu`).
  const name = `${runId}:${index}`;
  const nameBytes = Buffer.byteLength(name, 'utf8');
  const named = Buffer.allocUnsafe(NAMESPACE.length + nameBytes);
  NAMESPACE.copy(named, 0);
  named.write(name, NAMESPACE.length, nameBytes, 'utf8');
  // The digest as hex text, its version and variant set in the text: a digest returned as a
  // Buffer is a new native buffer each time, dearer than the hash (round 42 `par-cpu`).
  const hex = hash('sha1', named, 'hex');
  // Byte 6's high nibble is the version (5); byte 8's two high bits the variant (10).
  const variant = ((Number.parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The `Idempotency-Key` an App receives for a call: the same for the same (run, index), forever. */
export function idempotencyKeyFor(runId: string, index: number): string {
  return `${runId}:${index}`;
}
