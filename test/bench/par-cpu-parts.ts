/**
 * `node test/bench/par-cpu-parts.ts`: a binding call's per-call pieces of gateway CPU that round 42
 * (`par-cpu`) changed, each run `N` times (default 2000) after `WARM` (default 2000) in one process,
 * in the form d92635a had (`PART=<name>-before`, copied here verbatim) or the head's
 * (`PART=<name>-after`, imported). Counted, not timed: run it under callgrind with `N=0` and
 * `N=<n>` and take the difference of the instructions over n (`par-cpu-parts.sh` does that), which
 * reads the same at any load. Without valgrind it prints ns a call too (a time: only a hint).
 *
 * Parts: `hmac` (the journal's argument HMAC: 23-byte head, the arguments' JSON), `sig` (the
 * Standard Webhooks signature of a ~330-byte App request body), `opid` (the UUIDv5 operation id).
 */
import { createHmac, createSecretKey, hash } from 'node:crypto';
import { hmacSha256, hmacSha256Key } from '@islet/core';
import { operationIdFor } from '@islet/runs';

const N = Number(process.env.N ?? 2000);
const WARM = Number(process.env.WARM ?? 2000);
const PART = process.env.PART ?? 'hmac-after';

const runId = 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7';
const argsJson = JSON.stringify({ i: 12, note: 'hello' });
const body = JSON.stringify({
  tool: 'ping',
  kind: 'tool',
  arguments: { i: 12, note: 'hello' },
  context: {
    tenant: 't_bench',
    run: runId,
    session: 'sess_01JFZ8K4T1WJ0QX2M3N4P5R6S7',
    callIndex: 12,
    operationId: '8b225cba-4efa-514e-9d7f-683ab69cc45e',
    idempotencyKey: `${runId}:12`,
  },
});
const journalKey = 'islet-journal-args';
const secretKey = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64');

// d92635a's forms.
const keyObject = createSecretKey(Buffer.from(journalKey));
const sigKeyObject = createSecretKey(secretKey);
const NAMESPACE = Buffer.from('6f1d2c3a9b7e4f08a1c5d3e2b4a69780', 'hex');
function operationIdBefore(id: string, index: number): string {
  const b = hash('sha1', Buffer.concat([NAMESPACE, Buffer.from(`${id}:${index}`)]), 'buffer');
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// The head's.
const journalPrepared = hmacSha256Key(Buffer.from(journalKey));
const sigPrepared = hmacSha256Key(secretKey);

const parts: Record<string, (i: number) => string> = {
  'hmac-before': (i) =>
    createHmac('sha256', keyObject).update(`${runId}\0${i}\0${argsJson}`).digest('base64url'),
  'hmac-after': (i) => hmacSha256(journalPrepared, `${runId}\0${i}\0`, argsJson, 'base64url'),
  'sig-before': (i) =>
    `v1,${createHmac('sha256', sigKeyObject).update(`${runId}:${i}.1765000000.${body}`).digest('base64')}`,
  'sig-after': (i) => `v1,${hmacSha256(sigPrepared, `${runId}:${i}.1765000000.`, body, 'base64')}`,
  'opid-before': (i) => operationIdBefore(runId, i),
  'opid-after': (i) => operationIdFor(runId, i),
};
const part = parts[PART];
if (!part) throw new Error(`PART must be one of ${Object.keys(parts).join(', ')}`);
// Both forms give the same text.
const [name] = PART.split('-');
if (parts[`${name}-before`]?.(7) !== parts[`${name}-after`]?.(7)) throw new Error(`${name}: forms differ`);

let sink = 0;
for (let i = 0; i < WARM; i++) sink += part(i % 100).length;
const t = process.hrtime.bigint();
for (let i = 0; i < N; i++) sink += part(i % 100).length;
const ns = Number(process.hrtime.bigint() - t) / Math.max(1, N);
console.log(`${PART} N=${N} ${ns.toFixed(0)} ns a call (a time: a hint only) ${sink > 0 ? '' : '!'}`);
