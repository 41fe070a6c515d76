/**
 * The request an `http` App receives for one binding call (docs/apps.md is its contract): a JSON
 * body with the call and the context it belongs to, the connection's own headers (sealed at rest),
 * and the Standard Webhooks signature over the exact body. The tenant and run ride in the signed
 * body's `context` and in the signed `webhook-id` (the idempotency key, `<run>:<index>`); the
 * `x-islet-*` headers repeat them for routing and logs.
 */
import { BoundedMap, type Sealer } from '@islet/core';
import type { BindingCall } from '@islet/engine';
import type { CallSource, StoredRun } from '@islet/runs';
import { addWebhookHeaders, openSigning, signingSecrets } from './app-signing.ts';
import type { Connection } from './connections.ts';

/**
 * A connection's headers and signing secrets as opened lately, by ciphertext: every call of a
 * program opened both again, to the same text. Exact: a ciphertext opens to one text only (it is
 * authenticated), and an edit or a rotation seals anew, which is a new key here.
 */
const MAX_OPENED = 256;
const openedBy = new WeakMap<Sealer, BoundedMap<string, unknown>>();

function openedOnce<T>(sealer: Sealer, sealed: string, open: (sealer: Sealer, sealed: string) => T): T {
  let opened = openedBy.get(sealer);
  if (!opened) {
    opened = new BoundedMap(MAX_OPENED);
    openedBy.set(sealer, opened);
  }
  if (opened.has(sealed)) return opened.get(sealed) as T;
  const value = open(sealer, sealed);
  opened.set(sealed, value);
  return value;
}

const openHeaders = (sealer: Sealer, sealed: string) =>
  JSON.parse(sealer.open(sealed)) as Record<string, string>;

interface AppCallContext {
  idempotencyKey: string;
  operationId: string;
  input?: unknown;
}

export function appRequest(
  sealer: Sealer,
  run: StoredRun,
  call: BindingCall,
  source: CallSource,
  connection: Connection,
  ctx: AppCallContext,
  now = Date.now(),
  /** `call.argsJson` already parsed by the caller (binding-calls.ts parses a call's arguments once). */
  parsedArgs?: { value: unknown },
): { text: string; headers: Record<string, string> } {
  const body: Record<string, unknown> = {
    tool: source.name,
    kind: source.kind,
    arguments: parsedArgs ? parsedArgs.value : JSON.parse(call.argsJson),
  };
  if (ctx.input !== undefined) body.input = ctx.input;
  body.context = {
    tenant: run.tenant,
    run: run.id,
    session: run.session,
    callIndex: call.index,
    operationId: ctx.operationId,
    idempotencyKey: ctx.idempotencyKey,
  };
  const text = JSON.stringify(body);
  // A connection without headers of its own: the literal alone, no empty object made and spread.
  const headers: Record<string, string> = connection.sealedHeaders
    ? {
        ...openedOnce(sealer, connection.sealedHeaders, openHeaders),
        'content-type': 'application/json',
        'idempotency-key': ctx.idempotencyKey,
        'x-islet-tenant': run.tenant,
        'x-islet-run': run.id,
        'x-islet-operation-id': ctx.operationId,
      }
    : {
        'content-type': 'application/json',
        'idempotency-key': ctx.idempotencyKey,
        'x-islet-tenant': run.tenant,
        'x-islet-run': run.id,
        'x-islet-operation-id': ctx.operationId,
      };
  if (connection.sealedSigning) {
    // Which secrets sign is decided per call: a rotated-out one stops when it expires.
    const secrets = signingSecrets(openedOnce(sealer, connection.sealedSigning, openSigning), now);
    addWebhookHeaders(headers, secrets, ctx.idempotencyKey, text, now);
  }
  return { text, headers };
}
