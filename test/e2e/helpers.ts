/** Small HTTP helpers for the end-to-end tests: a JSON client, an SSE reader, a counting App server. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type ClusterOptions, startCluster } from '@islet/devstack';

// biome-ignore lint/suspicious/noExplicitAny: responses are read loosely in tests; assertions check them.
export type Loose = any;

export type Api = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; headers: Headers; body: Loose }>;

/** fetch() options for a request with the API key as bearer token and `body` (if any) as JSON. */
export function jsonRequest(
  key: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): RequestInit {
  return {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  };
}

export function api(baseUrl: string, key: string): Api {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`${baseUrl}${path}`, jsonRequest(key, method, body, headers));
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
}

export interface SseEvent {
  id: string;
  event: string;
  data: Loose;
}

/**
 * Reads a run's event stream until `until` says stop (or the stream ends). Returns the events read.
 */
export async function readSse(
  url: string,
  key: string,
  options: {
    lastEventId?: string;
    until?: (e: SseEvent, all: SseEvent[]) => boolean;
    timeoutMs?: number;
    onEvent?: (e: SseEvent) => void;
  } = {},
): Promise<SseEvent[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), options.timeoutMs ?? 20_000);
  const events: SseEvent[] = [];
  try {
    const res = await fetch(url, {
      headers: {
        authorization: `Bearer ${key}`,
        ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}),
      },
      signal: ac.signal,
    });
    if (res.status !== 200) throw new Error(`SSE ${res.status}: ${await res.text()}`);
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let sep = buf.indexOf('\n\n');
      while (sep >= 0) {
        const block = buf.slice(0, sep);
        buf = buf.slice(sep + 2);
        sep = buf.indexOf('\n\n');
        const e: Partial<SseEvent> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) e.id = line.slice(4);
          else if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
        }
        if (!e.event) continue;
        events.push(e as SseEvent);
        options.onEvent?.(e as SseEvent);
        if (options.until?.(e as SseEvent, events)) {
          ac.abort();
          return events;
        }
      }
    }
    return events;
  } catch (err) {
    if (ac.signal.aborted) return events;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export interface Delivery {
  idempotencyKey: string;
  body: { tool: string; kind: string; arguments: Loose };
}

/** The whole body of a request, as text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise<string>((resolve) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      s += c;
    });
    req.on('end', () => resolve(s));
  });
}

/** A local App: records every delivery, answers per tool, counts how many calls overlap. */
export async function startAppServer(
  handler: (d: Delivery) => Promise<{ status: number; body: string }> | { status: number; body: string },
) {
  const deliveries: Delivery[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server: Server = createServer(async (req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      const d: Delivery = {
        idempotencyKey: String(req.headers['idempotency-key'] ?? ''),
        body: JSON.parse(await readBody(req)),
      };
      deliveries.push(d);
      const out = await handler(d);
      res.writeHead(out.status, { 'content-type': 'application/json' }).end(out.body);
    } finally {
      inFlight--;
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/app`,
    deliveries,
    maxInFlight: () => maxInFlight,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Registers a connection (`POST /v1/connections`) and returns it; anything but 201 throws with the answer. */
export async function createConnection(on: Api, body: Record<string, unknown>): Promise<Loose> {
  const res = await on('POST', '/v1/connections', body);
  if (res.status !== 201) throw new Error(`POST /v1/connections: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** An http connection `name` at `url` whose tools are `tools`' names with their policies, through `createConnection`. */
export function httpConnection(
  on: Api,
  name: string,
  url: string,
  tools: Record<string, 'allow' | 'ask'>,
): Promise<Loose> {
  const list = Object.entries(tools).map(([tool, policy]) => ({ name: tool, policy }));
  return createConnection(on, { name, kind: 'http', url, tools: list });
}

export async function until<T>(
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
  stepMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(stepMs);
  }
}

/** Run `id`'s record on `url` once it ended (Completed, Failed or Cancelled), read every `stepMs`. */
export function untilEnded(
  url: string,
  key: string,
  id: string,
  timeoutMs = 120_000,
  stepMs = 100,
): Promise<Loose> {
  return until(
    async () => {
      const r = await api(url, key)('GET', `/v1/code-runs/${id}`);
      return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
    },
    timeoutMs,
    stepMs,
  );
}

/**
 * A cluster with one gateway, the given runners and env, and an http App whose one tool `wait`
 * answers `answer` after `delayMs`, registered as connection `Slow` (`apps.slow.wait`).
 * `stop()` closes the App and stops the cluster.
 */
export async function startSlowAppCluster(options: {
  runners: ClusterOptions['runners'];
  env: Record<string, string>;
  delayMs: number;
  answer: string;
}) {
  const cluster = await startCluster({ gateways: 1, runners: options.runners, env: options.env });
  const app = await startAppServer(async () => {
    await sleep(options.delayMs);
    return { status: 200, body: options.answer };
  });
  const stop = async () => {
    await app.close();
    await cluster.stop();
  };
  try {
    const a = api(cluster.url, cluster.devKey);
    const conn = (
      await a('POST', '/v1/connections', {
        name: 'Slow',
        kind: 'http',
        url: app.url,
        tools: [{ name: 'wait' }],
      })
    ).body;
    return { cluster, app, a, conn, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
