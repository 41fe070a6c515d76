/**
 * Apps can tell a request came from Islet: every `http` App request is signed the Standard Webhooks
 * way (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature` = `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the
 * connection's `whsec_` secret (the base64 after the prefix is the key). During a rotation both
 * secrets sign, space-separated, as the spec allows, so an App that still holds the previous
 * secret keeps verifying until it switches. The secrets are sealed with the connection.
 */
import { randomBytes } from 'node:crypto';
import { BoundedMap, type HmacSha256Key, hmacSha256, hmacSha256Key, type Sealer } from '@islet/core';

const SECRET_PREFIX = 'whsec_';

/** How long a rotated-out secret keeps signing unless the rotation says otherwise (Stripe's default). */
export const DEFAULT_PREVIOUS_SECRET_TTL_SECONDS = 24 * 60 * 60;
export const MAX_PREVIOUS_SECRET_TTL_SECONDS = 7 * 24 * 60 * 60;

/** The sealed part of a connection that signs its requests. */
export interface SigningState {
  current: string;
  previous?: { secret: string; expiresAt: number };
}

/** 24 random bytes, as Svix and the spec's examples use (192 bits, within the spec's 24–64). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

/**
 * Secrets' keys prepared lately (their padded blocks, core's hmac-once.ts): every http App call
 * signs, two one-shot hashes over a key prepared once instead of an `Hmac` object a signature
 * (the same digest; test/bench/README.md, round 42 `par-cpu`).
 */
const MAX_KEYS = 256;
const keys = new BoundedMap<string, HmacSha256Key>(MAX_KEYS);

function keyOf(secret: string): HmacSha256Key {
  const known = keys.get(secret);
  if (known) return known;
  const key = hmacSha256Key(
    Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'),
  );
  keys.set(secret, key);
  return key;
}

/** One `v1,<base64>` signature of the message (`id.timestamp.body`). */
export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${hmacSha256(keyOf(secret), `${id}.${timestampSeconds}.`, body, 'base64')}`;
}

/** The secrets that sign now: the current one, and the previous one until it expires. */
export function signingSecrets(state: SigningState, now = Date.now()): string[] {
  return state.previous && state.previous.expiresAt > now
    ? [state.current, state.previous.secret]
    : [state.current];
}

/** The three Standard Webhooks headers for `body`, signed with every secret given. */
export function webhookHeaders(
  secrets: readonly string[],
  id: string,
  body: string,
  now = Date.now(),
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return addWebhookHeaders({}, secrets, id, body, now);
}

/**
 * `webhookHeaders` set on `headers` itself, in the same order (an App request's headers: no object
 * of the three made and copied over a call).
 */
export function addWebhookHeaders<T extends Record<string, string>>(
  headers: T,
  secrets: readonly string[],
  id: string,
  body: string,
  now = Date.now(),
): T & Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(now / 1000);
  const out = headers as T & Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>;
  out['webhook-id'] = id;
  out['webhook-timestamp'] = String(timestamp);
  // One secret (no rotation under way) is the usual case: its signature alone, no array and join.
  out['webhook-signature'] =
    secrets.length === 1
      ? signatureOf(secrets[0] as string, id, timestamp, body)
      : secrets.map((s) => signatureOf(s, id, timestamp, body)).join(' ');
  return out;
}

export function sealSigning(sealer: Sealer, state: SigningState): string {
  return sealer.seal(JSON.stringify(state));
}

export function openSigning(sealer: Sealer, sealed: string): SigningState {
  return JSON.parse(sealer.open(sealed)) as SigningState;
}

/** A rotation: a new current secret; the old one signs too until `previousTtlSeconds` pass (0: never again). */
export function rotateSigning(
  state: SigningState,
  previousTtlSeconds: number,
  now = Date.now(),
): SigningState {
  const next: SigningState = { current: newSigningSecret() };
  if (previousTtlSeconds > 0)
    next.previous = { secret: state.current, expiresAt: now + previousTtlSeconds * 1000 };
  return next;
}

/**
 * Header names a tenant may not set on an http connection: the ones Islet itself sends (a tenant
 * value would replace the signature or the idempotency key the App relies on) and the ones that
 * frame the HTTP message.
 */
export function reservedAppHeader(name: string): boolean {
  const n = name.toLowerCase();
  return (
    n.startsWith('webhook-') ||
    n.startsWith('x-islet-') ||
    ['content-type', 'content-length', 'host', 'idempotency-key', 'transfer-encoding', 'connection'].includes(
      n,
    )
  );
}
