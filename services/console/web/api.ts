/**
 * The console's view of Islet's HTTP API. Requests go through the SDK's client
 * (services/sdk/src/client.ts) with the signed-in key; the types come from the same packages that
 * generate the OpenAPI document (protocol's record schema, the run package's decision request, core's
 * settings), imported as types only so nothing but the SDK client reaches the bundle.
 */
import type { PlatformSettings } from '@islet/core';
import type { CodeRunRecord, Connection, LogLineRecord } from '@islet/protocol';
import type { DecisionRequest, DecisionState } from '@islet/runs';
import { createIsletClient, IsletApiError, type Problem } from '../../sdk/src/client.ts';

export type { CodeRunRecord, LogLineRecord, PlatformSettings, Problem };
export type Decision = DecisionRequest & { id: string; state: DecisionState };
export { IsletApiError };

/** A connection as `GET /v1/connections` lists it (the route adds `bindings`). */
export type ConnectionView = Connection & { bindings: string[] };

/** One row of the session stream (`GET /v1/sessions/{id}/events`, event `run`). */
export interface RunSummary {
  id: string;
  status: CodeRunRecord['status'];
  reason: string;
  createdAt: number;
  updatedAt: number;
  failure?: string;
}

const KEY = 'islet.apiKey';

/** The key lives only in this tab's session storage: closing the tab signs out. */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string) => sessionStorage.setItem(KEY, key),
  signOut: () => sessionStorage.removeItem(KEY),
};

export function client() {
  return createIsletClient({ url: location.origin, key: session.key() ?? '', fetch: (...a) => fetch(...a) });
}

export function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return client().call<T>(method, path, body);
}

/** Log bytes a run page reads with a record: the first and last lines within it, the rest downloadable. */
const RECORD_LOG_BYTES = 1024 * 1024;

/** A record read with `maxLogBytes`: what it left out of the logs and the text. */
export type BoundedRecord = CodeRunRecord & {
  logsOmitted?: { lines: number; bytes: number; after: number; totalLines: number; totalBytes: number };
  textOmittedChars?: number;
};

/** A run's record with its logs bounded (a run may print 64 MiB; its whole record is twice that). */
export function readBoundedRecord(id: string): Promise<BoundedRecord> {
  return api<BoundedRecord>('GET', `/v1/code-runs/${encodeURIComponent(id)}?maxLogBytes=${RECORD_LOG_BYTES}`);
}

export function problemText(err: unknown): string {
  if (err instanceof IsletApiError) return err.problem.detail ?? err.problem.title;
  return err instanceof Error ? err.message : String(err);
}

export interface SseEvent {
  id: string;
  event: string;
  data: unknown;
}

/**
 * Reads an SSE stream with fetch, because EventSource cannot send the Authorization header.
 * Reconnects after a drop with Last-Event-ID, as EventSource would; stops on `end`, on abort, and
 * on a 4xx answer (reported through `onError`).
 */
export async function readSse(
  path: string,
  onEvent: (e: SseEvent) => void,
  signal: AbortSignal,
  onError: (problem: string, status?: number) => void = () => {},
  onOpen: () => void = () => {},
): Promise<void> {
  let lastId = '';
  let retryMs = 1000;
  while (!signal.aborted) {
    let ended = false;
    try {
      const headers: Record<string, string> = {
        authorization: `Bearer ${session.key() ?? ''}`,
        accept: 'text/event-stream',
      };
      if (lastId) headers['last-event-id'] = lastId;
      const res = await fetch(path, { headers, signal });
      if (!res.ok || !res.body) {
        const p = (await res.json().catch(() => null)) as Problem | null;
        onError(p?.detail ?? p?.title ?? `HTTP ${res.status}`, res.status);
        if (res.status >= 400 && res.status < 500) return;
      } else {
        onOpen();
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          // One cut per chunk, not per event: slicing the rest after each event was quadratic in
          // a chunk that holds thousands of small `log` events.
          let from = 0;
          let cut = buf.indexOf('\n\n', from);
          while (cut >= 0) {
            const block = buf.slice(from, cut);
            from = cut + 2;
            cut = buf.indexOf('\n\n', from);
            const e = { id: '', event: 'message', data: '' };
            for (const line of block.split('\n')) {
              const i = line.indexOf(':');
              if (i <= 0) continue;
              const field = line.slice(0, i);
              const v = line.slice(i + 1).replace(/^ /, '');
              if (field === 'id') e.id = v;
              else if (field === 'event') e.event = v;
              else if (field === 'data') e.data += e.data ? `\n${v}` : v;
              else if (field === 'retry' && /^\d+$/.test(v)) retryMs = Number(v);
            }
            if (!e.data) continue;
            if (e.id) lastId = e.id;
            let data: unknown = e.data;
            try {
              data = JSON.parse(e.data);
            } catch {}
            onEvent({ id: e.id, event: e.event, data });
            if (e.event === 'end') ended = true;
          }
          if (from > 0) buf = buf.slice(from);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      onError(problemText(err));
    }
    if (ended) return;
    await new Promise((r) => setTimeout(r, retryMs));
  }
}

/** Milliseconds of a Redis stream id (`<ms>-<seq>`), the time an event was recorded. */
export function eventTime(id: string): number {
  return Number(id.split('-')[0]);
}
