/**
 * The runner's binding-call path: every call the program makes is POSTed to a gateway's internal
 * route and answered only after the gateway journaled the outcome. Calls of one execution made in
 * the same turn (a `Promise.all`) go as one `call-batch` request whose NDJSON answer carries each
 * call's outcome as soon as it is journaled, so parallel calls stay parallel end to end without a
 * request each; a lone call goes alone. Gateways are tried round-robin; when one cannot be reached
 * (or answers 5xx) the call is retried on the next, alone, with `takeover`, so the journal can tell
 * a lost handler from a duplicate delivery. A gateway without the batch route (an older replica)
 * answers 404 for it, and its calls go alone instead.
 */

import { BoundedMap } from '@islet/core';
import type { BindingCall, BindingOutcome } from '@islet/engine';
import type { LiveOutcome } from '@islet/runs';
import { Agent, type Dispatcher } from 'undici';
import { callBody } from './call-body.ts';
import { GatewayPost } from './gateway-post.ts';

interface GatewayClientOptions {
  urls: string[];
  token: string;
  /** Transport of a lone call (tests inject one). Default: gateway-post.ts, keep-alive, no response deadline. */
  post?: PostFn;
  /**
   * Tries per call across gateways before the call fails as AppCallFailed. Default 40 (about 35 s
   * with the capped back-off): long enough to ride out a gateway or Redis restart, because an
   * outcome given up on here is not journaled and a replay would see something else.
   */
  maxTries?: number;
  /** Pause between tries, ms (grows linearly up to 5×). Default 200. */
  retryDelayMs?: number;
  /** Transport of a batch (tests inject one). Default: undici's dispatch, like `post`. */
  postBatch?: PostBatchFn;
  /** Send an execution's calls made in the same turn as one batch. Default true. */
  batch?: boolean;
}

export interface GatewayClient {
  call(runId: string, attempt: number, call: BindingCall, signal?: AbortSignal): Promise<LiveOutcome>;
}

type PostFn = (
  url: string,
  headers: Record<string, string>,
  body: string,
  signal?: AbortSignal,
) => Promise<{ status: number; text: string }>;

/**
 * POSTs a batch; `onLine` gets each line of a 200 answer as it arrives. Resolves when the answer
 * ends, with its status and (not 200) its body.
 */
type PostBatchFn = (
  url: string,
  headers: Record<string, string>,
  body: string,
  onLine: (line: string) => void,
  signal?: AbortSignal,
) => Promise<{ status: number; text: string }>;

/** One line of a batch's answer (the gateway's `internal.ts`). */
interface BatchLine {
  index: number;
  status: number;
  outcome?: BindingOutcome;
  deliverySeq?: number;
  problem?: unknown;
}

/** Calls per batch request; arguments larger than this many bytes go alone. */
const MAX_BATCH_CALLS = 100;
const MAX_BATCH_ARGS_BYTES = 64 * 1024;

/**
 * One POST through undici's `dispatch` with a handler of our own: no `ClientRequest`, no response
 * stream and its events, no AbortSignal listener of node:http's per call (a sequential call's
 * request and answer are both on the runner's path; README round 28, call-seq). `onData` gets the
 * answer's chunks as they arrive; resolves with the status when it ends. No deadline: a call may
 * take minutes (a client connection's answer, a decision held in place); `signal` ends it.
 */
/** Where undici sends a POST to `url`: a pure function of the text, kept for a run's next calls. */
const targets = new BoundedMap<string, { origin: string; path: string }>(256);
function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (!target) {
    const u = new URL(url);
    target = { origin: u.origin, path: `${u.pathname}${u.search}` };
    targets.set(url, target);
  }
  return target;
}

function dispatchPost(
  agent: Agent,
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal | undefined,
  onData: (status: number, chunk: Buffer) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    // A run's calls share their URL (the run's id is in it): parsed once, not once a call.
    let target: { origin: string; path: string };
    try {
      target = targetOf(url);
    } catch (err) {
      return reject(err);
    }
    let settled = false;
    let controller: Dispatcher.DispatchController | undefined;
    let status = 0;
    const onAbort = () => fail(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      reject(err);
      controller?.abort(err);
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (settled) c.abort(new Error('aborted'));
      },
      onResponseStart(_c, statusCode) {
        status = statusCode;
      },
      onResponseData(_c, chunk) {
        if (!settled) onData(status, chunk);
      },
      onResponseEnd() {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        resolve(status);
      },
      onResponseError(_c, err) {
        fail(err);
      },
    };
    try {
      agent.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, handler);
    } catch (err) {
      fail(err as Error);
    }
  });
}

/** Keep-alive connections, no headers or body deadline (see `dispatchPost`). */
const callAgent = () => new Agent({ headersTimeout: 0, bodyTimeout: 0 });

/** A lone call's POST: gateway-post.ts, a kept-alive socket of its own (not undici's machinery). */
function createHttpPost(): PostFn {
  const transport = new GatewayPost();
  return (url, headers, body, signal) => transport.post(url, headers, body, signal);
}

function createHttpPostBatch(): PostBatchFn {
  const agent = callAgent();
  return async (url, headers, body, onLine, signal) => {
    const decoder = new TextDecoder();
    let rest = '';
    const chunks: Buffer[] = [];
    const status = await dispatchPost(agent, url, headers, body, signal, (status, c) => {
      if (status !== 200) return void chunks.push(c);
      rest += decoder.decode(c, { stream: true });
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        const line = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        if (line) onLine(line);
      }
    });
    return { status, text: Buffer.concat(chunks).toString('utf8') };
  };
}

const failed = (reason: string, message: string): BindingOutcome => ({
  type: 'error',
  name: 'AppCallFailed',
  message,
  details: { reason },
});

export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const post = options.post ?? createHttpPost();
  const postBatch = options.postBatch ?? createHttpPostBatch();
  const batching = options.batch !== false;
  const maxTries = options.maxTries ?? 40;
  const delay = options.retryDelayMs ?? 200;
  const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' };
  const stopped: LiveOutcome = {
    outcome: { type: 'stop', code: 'cancelled', message: 'the run was stopped' },
  };
  const refusedBy = (status: number, text: string): LiveOutcome => ({
    outcome: failed('gateway-refused', `the gateway refused the call (${status}): ${text.slice(0, 300)}`),
  });
  let next = 0;

  /** One call, one request per try; from `firstTry` 1 on, the call is a takeover. */
  async function alone(
    runId: string,
    attempt: number,
    call: BindingCall,
    signal: AbortSignal | undefined,
    firstTry: number,
    lastErrorBefore = 'no gateway tried',
  ): Promise<LiveOutcome> {
    let lastError = lastErrorBefore;
    for (let tryNo = firstTry; tryNo < maxTries; tryNo++) {
      if (tryNo > 0) await new Promise((r) => setTimeout(r, delay * Math.min(tryNo, 5)));
      if (signal?.aborted) return stopped;
      const base = options.urls[next++ % options.urls.length]!;
      try {
        const res = await post(
          `${base}/internal/v1/code-runs/${encodeURIComponent(runId)}/calls`,
          headers,
          callBody(attempt, call, tryNo > 0),
          signal,
        );
        const text = res.text;
        if (res.status >= 200 && res.status < 300) {
          const body = JSON.parse(text) as LiveOutcome;
          return body.deliverySeq === undefined ? { outcome: body.outcome } : body;
        }
        // A 4xx will not change on retry: the run is gone or the call was refused.
        if (res.status < 500) return refusedBy(res.status, text);
        lastError = `gateway answered ${res.status}`;
      } catch (err) {
        if (signal?.aborted) return stopped;
        lastError = (err as Error).message;
      }
    }
    return { outcome: failed('gateway-unreachable', `no gateway could serve the call: ${lastError}`) };
  }

  interface Queued {
    call: BindingCall;
    signal: AbortSignal | undefined;
    resolve: (outcome: LiveOutcome) => void;
  }
  // An execution's calls waiting for the end of the turn, by run and attempt.
  const queued = new Map<string, { runId: string; attempt: number; items: Queued[] }>();

  function flush(key: string): void {
    const group = queued.get(key);
    queued.delete(key);
    if (!group) return;
    const { runId, attempt, items } = group;
    for (let i = 0; i < items.length; i += MAX_BATCH_CALLS) {
      const chunk = items.slice(i, i + MAX_BATCH_CALLS);
      if (chunk.length === 1) {
        const only = chunk[0]!;
        void alone(runId, attempt, only.call, only.signal, 0).then(only.resolve);
      } else void sendBatch(runId, attempt, chunk);
    }
  }

  async function sendBatch(runId: string, attempt: number, items: Queued[]): Promise<void> {
    const left = new Map(items.map((q) => [q.call.index, q]));
    const signals = [...new Set(items.map((q) => q.signal).filter((s) => s !== undefined))];
    const signal = signals.length <= 1 ? signals[0] : AbortSignal.any(signals);
    const settle = (index: number, outcome: LiveOutcome | ((q: Queued) => Promise<LiveOutcome>)) => {
      const q = left.get(index);
      if (!q) return;
      left.delete(index);
      if (typeof outcome === 'function') void outcome(q).then(q.resolve);
      else q.resolve(outcome);
    };
    // Not served here: tried again alone on the next gateway, as a takeover (it may have started).
    const retry = (why: string) => (q: Queued) => alone(runId, attempt, q.call, q.signal, 1, why);
    const base = options.urls[next++ % options.urls.length]!;
    try {
      const res = await postBatch(
        `${base}/internal/v1/code-runs/${encodeURIComponent(runId)}/call-batch`,
        headers,
        JSON.stringify({ attempt, calls: items.map((q) => q.call) }),
        (text) => {
          let line: BatchLine;
          try {
            line = JSON.parse(text) as BatchLine;
          } catch {
            // Not a line of ours: ignored here (this runs in the socket's data handler); a call it
            // was meant to answer is retried when the batch ends without its answer.
            return;
          }
          if (line.status === 200 && line.outcome)
            settle(
              line.index,
              line.deliverySeq === undefined
                ? { outcome: line.outcome }
                : { outcome: line.outcome, deliverySeq: line.deliverySeq },
            );
          else if (line.status >= 500) settle(line.index, retry(`gateway answered ${line.status}`));
          else settle(line.index, refusedBy(line.status, JSON.stringify(line.problem ?? null)));
        },
        signal,
      );
      // No batch route (an older gateway): nothing was served, each call goes alone, first try.
      const status = res.status;
      const rest =
        status === 404 || status === 405
          ? (q: Queued) => alone(runId, attempt, q.call, q.signal, 0)
          : status === 200 || status >= 500
            ? retry(status === 200 ? 'the batch ended without its answer' : `gateway answered ${status}`)
            : undefined;
      for (const index of [...left.keys()]) settle(index, rest ?? refusedBy(status, res.text));
    } catch (err) {
      for (const index of [...left.keys()])
        settle(index, signal?.aborted ? stopped : retry((err as Error).message));
    }
  }

  return {
    call(runId, attempt, call, signal) {
      if (!batching || Buffer.byteLength(call.argsJson) > MAX_BATCH_ARGS_BYTES)
        return alone(runId, attempt, call, signal, 0);
      return new Promise<LiveOutcome>((resolve) => {
        const key = `${runId}\u0000${attempt}`;
        let group = queued.get(key);
        if (!group) {
          group = { runId, attempt, items: [] };
          queued.set(key, group);
          // The program's calls of a turn arrive in one read of the host's frames, and the engine
          // hands each to its handler as it is read, which reaches here in the same synchronous
          // step (run-executor's handler, the replaying handler and parking call on with no await
          // before this): a microtask queued by the first runs when that read's step ends, all of
          // its calls gathered. A lone call goes then, with no `process.nextTick` (what this was
          // until round 41: one tick a call, ~1.7 µs hot; test/bench/README.md, round 41
          // `stdout-pair`). Calls reaching here in promise jobs of one drain (those the engine
          // held past `maxConcurrentCalls`, started as others settle) are gathered as far as they
          // arrive before it, the same depth of jobs each; any later go as a batch of their own.
          queueMicrotask(() => flush(key));
        }
        group.items.push({ call, signal, resolve });
      });
    },
  };
}
