/**
 * What every Server-Sent Events route does before its own loop: take one of the tenant's stream
 * slots (429 with Retry-After when the tenant has ISLET_SSE_STREAMS_PER_TENANT open), hijack the
 * reply, write the event-stream head, and give a signal that aborts when the client goes, the
 * gateway closes, or the caller's key stops working (revoked, rotated away, expired: key-watch.ts).
 */
import type { FastifyReply } from 'fastify';
import type { Caller } from '../auth.ts';
import type { KeyWatch } from '../key-watch.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { SseSlot, SseSlotStore } from '../sse-slot-store.ts';

/** Retry-After of a refused stream: slots free when streams end, which a client cannot see. */
const FULL_RETRY_AFTER_SECONDS = 5;

export async function takeStreamSlot(slots: SseSlotStore, tenant: string, limit: number): Promise<SseSlot> {
  const slot = await slots.take(tenant);
  if (slot) return slot;
  throw new HttpProblem(
    'rate-limited',
    `tenant has ${limit} event streams open, the most it may have; close one or retry in ${FULL_RETRY_AFTER_SECONDS}s`,
    { limit, retryAfterSeconds: FULL_RETRY_AFTER_SECONDS },
    { 'retry-after': String(FULL_RETRY_AFTER_SECONDS) },
  );
}

export function openEventStream(
  reply: FastifyReply,
  closing: AbortSignal,
  key?: { caller: Caller; keyWatch: KeyWatch },
) {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const ac = new AbortController();
  const abort = () => ac.abort();
  res.once('close', abort);
  closing.addEventListener('abort', abort, { once: true });
  const hash = key?.caller.keyHash;
  if (hash && key) {
    const unwatch = key.keyWatch.watch(hash, () => {
      // The client must not take the end for a network break and reconnect with a dead key.
      if (!res.writableEnded) res.write('event: key-revoked\ndata: {}\n\n');
      abort();
    });
    ac.signal.addEventListener('abort', unwatch, { once: true });
  }
  return { res, signal: ac.signal, abort };
}
