/**
 * An SSE stream opened over real HTTP, for the gateway's event-stream tests: events are parsed
 * as they arrive; `next(pred)` waits for the first matching event after the last one it returned,
 * so a test reads a stream in the order the gateway wrote it; `some(pred)` waits for a matching
 * event wherever it is (events whose order the test does not fix).
 */
import { expect } from 'vitest';

export interface Sse {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

export interface SseStream {
  status: number;
  events: Sse[];
  next(pred: (e: Sse) => boolean, timeoutMs?: number): Promise<Sse>;
  some(pred: (e: Sse) => boolean, timeoutMs?: number): Promise<Sse>;
  close(): Promise<void>;
}

/** Opens `url` with `headers`; `expectOk` fails the test at once on a non-200 answer. */
export async function openSse(
  url: string,
  headers: Record<string, string>,
  expectOk = false,
): Promise<SseStream> {
  const ac = new AbortController();
  const res = await fetch(url, { headers, signal: ac.signal });
  if (expectOk) expect(res.status).toBe(200);
  const events: Sse[] = [];
  let seen = 0;
  async function wait(find: () => number, timeoutMs: number): Promise<Sse> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const i = find();
      if (i >= 0) return events[i] as Sse;
      if (Date.now() > until) throw new Error(`no such event; got ${JSON.stringify(events)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const done = (async () => {
    if (res.status !== 200) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let cut = buf.indexOf('\n\n'); cut >= 0; cut = buf.indexOf('\n\n')) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const e: Sse = { event: 'message', data: {} };
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
          }
          if (block.includes('event: ')) events.push(e);
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    status: res.status,
    events,
    async next(pred, timeoutMs = 10_000) {
      const e = await wait(() => events.findIndex((e, n) => n >= seen && pred(e)), timeoutMs);
      seen = events.indexOf(e) + 1;
      return e;
    },
    some(pred, timeoutMs = 10_000) {
      return wait(() => events.findIndex(pred), timeoutMs);
    },
    async close() {
      ac.abort();
      await done;
    },
  };
}
