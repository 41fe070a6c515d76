/**
 * What every Server-Sent Events route does before its own loop: take one of the tenant's stream
 * slots (429 with Retry-After when the tenant has ISLET_SSE_STREAMS_PER_TENANT open), hijack the
 * reply, write the event-stream head, and give a signal that aborts when the client goes or the
 * gateway closes.
 */
import type { FastifyReply } from 'fastify';
import { HttpProblem } from '../problem-reply.ts';
import type { createSseSlots, SseSlot } from '../sse-slots.ts';

/** Retry-After of a refused stream: slots free when streams end, which a client cannot see. */
const FULL_RETRY_AFTER_SECONDS = 5;

export async function takeStreamSlot(
  slots: ReturnType<typeof createSseSlots>,
  tenant: string,
  limit: number,
): Promise<SseSlot> {
  const slot = await slots.take(tenant);
  if (slot) return slot;
  throw new HttpProblem(
    'rate-limited',
    `tenant has ${limit} event streams open, the most it may have; close one or retry in ${FULL_RETRY_AFTER_SECONDS}s`,
    { limit, retryAfterSeconds: FULL_RETRY_AFTER_SECONDS },
    { 'retry-after': String(FULL_RETRY_AFTER_SECONDS) },
  );
}

export function openEventStream(reply: FastifyReply, closing: AbortSignal) {
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
  return { res, signal: ac.signal, abort };
}
