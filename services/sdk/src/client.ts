/**
 * A small typed client for Islet's HTTP API. Errors come back as `IsletApiError` carrying the
 * problem+json body, so callers branch on `problem.type`, never on text.
 */
import type { components } from './generated/openapi.ts';
import { parseEventStream, type StreamEvent } from './sse.ts';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  [k: string]: unknown;
}

export class IsletApiError extends Error {
  override name = 'IsletApiError';
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(`${problem.status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''}`);
    this.problem = problem;
  }
}

/** No HTTP answer at all: `url` could not be reached; `reason` says why (ECONNREFUSED, a DNS error…). */
export class IsletConnectionError extends Error {
  override name = 'IsletConnectionError';
  readonly url: string;
  readonly reason: string;
  constructor(url: string, cause: unknown) {
    const reason = connectionReason(cause);
    super(`cannot reach ${url}: ${reason}`, { cause });
    this.url = url;
    this.reason = reason;
  }
}

/** undici's `fetch failed` hides the reason in `cause` (sometimes an AggregateError of addresses). */
function connectionReason(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause;
  if (cause instanceof AggregateError && cause.errors.length > 0) cause = cause.errors[0];
  const e = cause as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(cause);
  return code && !message.includes(code) ? `${code} (${message})` : message;
}

/** A pending decision as `GET /v1/decisions` lists it (the Code Mode request shape). */
export type Decision = components['schemas']['Decision'];

export const FINAL_STATUSES = ['Completed', 'Failed', 'Cancelled'] as const;

/** A run request: `code` and `description` required; the rest per the run style (generated from the API). */
export type SubmitRun = components['schemas']['RunRequest'];

/** A code run's record (generated from the API). */
export type CodeRun = components['schemas']['CodeRun'];

function problemError(res: Response, text: string): IsletApiError {
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  const problem =
    parsed && typeof parsed === 'object' && typeof (parsed as Problem).type === 'string'
      ? (parsed as Problem)
      : { type: 'about:blank', title: res.statusText || `HTTP ${res.status}`, status: res.status };
  return new IsletApiError(problem);
}

export function createIsletClient(options: { url: string; key: string; fetch?: typeof fetch }) {
  const doFetch = options.fetch ?? fetch;
  const base = options.url.replace(/\/$/, '');
  async function call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const res = await send(method, path, body, headers);
    const text = await res.text();
    if (!res.ok) throw problemError(res, text);
    return (text ? JSON.parse(text) : undefined) as T;
  }
  async function send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Response> {
    const url = `${base}${path}`;
    try {
      return await doFetch(url, {
        method,
        headers: {
          authorization: `Bearer ${options.key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new IsletConnectionError(url, err);
    }
  }
  /** The run's events from the first (or after `lastEventId`) to `end`, where the generator stops. */
  async function* events(id: string, opts: { lastEventId?: string; signal?: AbortSignal } = {}) {
    const res = await send(
      'GET',
      `/v1/code-runs/${encodeURIComponent(id)}/events`,
      undefined,
      { accept: 'text/event-stream', ...(opts.lastEventId ? { 'last-event-id': opts.lastEventId } : {}) },
      opts.signal,
    );
    if (!res.ok || !res.body) throw problemError(res, await res.text());
    for await (const event of parseEventStream(res.body)) {
      yield event;
      if (event.event === 'end') return;
    }
  }
  const getRun = (id: string) => call<CodeRun>('GET', `/v1/code-runs/${encodeURIComponent(id)}`);
  /**
   * Follows a run on its event stream until it is final and returns the record; a dropped stream
   * resumes after the last event seen, a full stream quota (429) falls back to reading the record.
   */
  async function waitForRun(
    id: string,
    opts: { onEvent?: (e: StreamEvent) => void; signal?: AbortSignal } = {},
  ): Promise<CodeRun> {
    let last: string | undefined;
    for (;;) {
      const run = await getRun(id);
      if ((FINAL_STATUSES as readonly string[]).includes(run.status)) return run;
      opts.signal?.throwIfAborted();
      try {
        for await (const e of events(id, { ...(last ? { lastEventId: last } : {}), ...opts })) {
          last = e.id ?? last;
          opts.onEvent?.(e);
        }
      } catch (err) {
        const retry =
          err instanceof IsletConnectionError || (err instanceof IsletApiError && err.problem.status === 429);
        if (!retry) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
  return {
    call,
    events,
    waitForRun,
    /** Submits a run; with `waitSeconds` the answer is the finished record when it ends in time. */
    submitRun: (run: SubmitRun, opts: { waitSeconds?: number; idempotencyKey?: string } = {}) =>
      call<CodeRun>('POST', '/v1/runs', run, {
        ...(opts.waitSeconds ? { prefer: `wait=${opts.waitSeconds}` } : {}),
        ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
      }),
    getRun,
    /** The tenant's pending decisions (decisions scope). */
    listDecisions: async () => (await call<{ items: Decision[] }>('GET', '/v1/decisions')).items,
    /** Answers a decision once (`<run>:<index>`, or run id and index); a second answer is a 409. */
    answerDecision: (
      runId: string,
      index: number,
      answer: { allow: boolean; scope?: 'once' | 'session'; input?: unknown },
    ) =>
      call<Decision>('POST', `/v1/code-runs/${encodeURIComponent(runId)}/decisions`, {
        index,
        ...answer,
      }),
    cancelRun: (id: string) => call<CodeRun>('POST', `/v1/code-runs/${encodeURIComponent(id)}/cancel`),
    listSessionRuns: (sessionId: string, cursor?: string) =>
      call<components['schemas']['CodeRunPage']>(
        'GET',
        `/v1/sessions/${encodeURIComponent(sessionId)}/code-runs${cursor ? `?cursor=${cursor}` : ''}`,
      ),
    createTenant: (t: { id?: string; name: string; rateLimitPerMinute?: number; maxInFlightRuns?: number }) =>
      call<{ id: string; name: string }>('POST', '/v1/admin/tenants', t),
    createKey: (tenantId: string, scopes: string[], principal?: string) =>
      call<{ key: string; keyId: string; principal: string; tenantId: string; scopes: string[] }>(
        'POST',
        `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys`,
        principal ? { scopes, principal } : { scopes },
      ),
  };
}

export type IsletClient = ReturnType<typeof createIsletClient>;
