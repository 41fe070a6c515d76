/**
 * What every Server-Sent Events route shares: take one of the caller's stream slots (429 with
 * Retry-After when its key has ISLET_SSE_STREAMS_PER_KEY open or its tenant
 * ISLET_SSE_STREAMS_PER_TENANT), hijack the reply, write the event-stream head, and give a signal
 * that aborts when the client goes, the gateway closes, or the caller's key stops working
 * (revoked, rotated away, expired: key-watch.ts). `openSlottedStream` adds the loop's parts every
 * stream needs: the slot's lease renewed while it runs, heartbeats while idle, a wake-up others
 * poke, and one close that ends the response and gives the slot back.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../auth.ts';
import type { KeyWatch } from '../key-watch.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { SseSlot, SseSlots } from '../sse-slot-store.ts';
import type { RouteContext } from './context.ts';

/** Retry-After of a refused stream: slots free when streams end, which a client cannot see. */
const FULL_RETRY_AFTER_SECONDS = 5;
const HEARTBEAT_MS = 15_000;
/** Slot leases are renewed at least this often (well inside SSE_LEASE_MS). */
const RENEW_MS = 10_000;

async function takeStreamSlot(slots: SseSlots, caller: Pick<Caller, 'tenantId' | 'keyId'>): Promise<SseSlot> {
  const slot = await slots.take(caller.tenantId, caller.keyId);
  if (!('full' in slot)) return slot;
  const limit = slot.full === 'key' ? slots.limits.perKey : slots.limits.perTenant;
  const who = slot.full === 'key' ? 'API key' : 'tenant';
  const most = slot.full === 'key' ? 'the most one key may have' : 'the most it may have';
  throw new HttpProblem(
    'rate-limited',
    `${who} has ${limit} event streams open, ${most}; close one or retry in ${FULL_RETRY_AFTER_SECONDS}s`,
    { limit, scope: slot.full, retryAfterSeconds: FULL_RETRY_AFTER_SECONDS },
    { 'retry-after': String(FULL_RETRY_AFTER_SECONDS) },
  );
}

function openEventStream(
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

/** A slotted stream's loop parts (see the header). */
interface SlottedStream {
  signal: AbortSignal;
  write(text: string): void;
  /** Renews the slot's lease when due and writes a heartbeat when nothing was written for a while. */
  tick(): Promise<void>;
  /** Marks the stream as having something to read and wakes a `wait`. */
  poke(): void;
  /** Waits until poked (at once if poked since the last call), the stream ends, or `ms` pass. */
  wait(ms: number): Promise<void>;
  /** Ends the response and gives the slot back (never throws). */
  close(): Promise<void>;
}

export async function openSlottedStream(
  ctx: RouteContext,
  request: FastifyRequest,
  reply: FastifyReply,
  caller: Caller,
): Promise<SlottedStream> {
  const slot = await takeStreamSlot(ctx.deps.streamSlots, caller);
  const { res, signal, abort } = openEventStream(reply, ctx.closing, { caller, keyWatch: ctx.auth.keyWatch });
  let lastWrite = Date.now();
  let renewed = Date.now();
  let dirty = false;
  let wake: () => void = () => {};
  signal.addEventListener('abort', () => wake(), { once: true });
  return {
    signal,
    write(text) {
      res.write(text);
      lastWrite = Date.now();
    },
    async tick() {
      if (Date.now() - renewed >= RENEW_MS) {
        await slot.renew();
        renewed = Date.now();
      }
      if (Date.now() - lastWrite >= HEARTBEAT_MS) {
        res.write(': heartbeat\n\n');
        lastWrite = Date.now();
      }
    },
    poke() {
      dirty = true;
      wake();
    },
    async wait(ms) {
      if (!dirty && !signal.aborted)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      dirty = false;
    },
    async close() {
      // The closing signal outlives every stream: do not leave a listener on it.
      ctx.closing.removeEventListener('abort', abort);
      res.end();
      await slot
        .release()
        .catch((err: unknown) => request.log.warn({ err }, 'event stream slot not released'));
    },
  };
}
