/**
 * The runner's binding-call path: every call the program makes is POSTed to a gateway's internal
 * route and answered only after the gateway journaled the outcome. One HTTP request per call, so
 * a program's parallel calls stay parallel end to end. Gateways are tried round-robin; when one
 * cannot be reached (or answers 5xx) the call is retried on the next with `takeover`, so the
 * journal can tell a lost handler from a duplicate delivery.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { BindingCall, BindingOutcome } from '@islet/engine';
import type { LiveOutcome } from '@islet/journal';

export interface GatewayClientOptions {
  urls: string[];
  token: string;
  /** Transport (tests inject one). Default: node:http with keep-alive and no response deadline. */
  post?: PostFn;
  /**
   * Tries per call across gateways before the call fails as AppCallFailed. Default 40 (about 35 s
   * with the capped back-off): long enough to ride out a gateway or Redis restart, because an
   * outcome given up on here is not journaled and a replay would see something else.
   */
  maxTries?: number;
  /** Pause between tries, ms (grows linearly up to 5×). Default 200. */
  retryDelayMs?: number;
}

export interface GatewayClient {
  call(runId: string, attempt: number, call: BindingCall, signal?: AbortSignal): Promise<LiveOutcome>;
}

export type PostFn = (
  url: string,
  headers: Record<string, string>,
  body: string,
  signal?: AbortSignal,
) => Promise<{ status: number; text: string }>;

/**
 * node:http rather than fetch: a call may legitimately take minutes (a client connection's answer,
 * a decision held in place), and fetch's built-in 300 s headers timeout would cut it.
 */
export function createHttpPost(): PostFn {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return (url, headers, body, signal) =>
    new Promise((resolve, reject) => {
      const u = new URL(url);
      const secure = u.protocol === 'https:';
      const req = (secure ? httpsRequest : httpRequest)(
        u,
        {
          method: 'POST',
          agent: secure ? agents.https : agents.http,
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

const failed = (reason: string, message: string): BindingOutcome => ({
  type: 'error',
  name: 'AppCallFailed',
  message,
  details: { reason },
});

export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const post = options.post ?? createHttpPost();
  const maxTries = options.maxTries ?? 40;
  const delay = options.retryDelayMs ?? 200;
  let next = 0;
  return {
    async call(runId, attempt, call, signal) {
      let lastError = 'no gateway tried';
      for (let tryNo = 0; tryNo < maxTries; tryNo++) {
        if (signal?.aborted)
          return { outcome: { type: 'stop', code: 'cancelled', message: 'the run was stopped' } };
        const base = options.urls[next++ % options.urls.length]!;
        try {
          const res = await post(
            `${base}/internal/v1/code-runs/${encodeURIComponent(runId)}/calls`,
            { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
            JSON.stringify({ attempt, ...call, ...(tryNo > 0 ? { takeover: true } : {}) }),
            signal,
          );
          const text = res.text;
          if (res.status >= 200 && res.status < 300) {
            const body = JSON.parse(text) as LiveOutcome;
            return body.deliverySeq === undefined ? { outcome: body.outcome } : body;
          }
          if (res.status >= 500) {
            lastError = `gateway answered ${res.status}`;
          } else {
            // A 4xx will not change on retry: the run is gone or the call was refused.
            return {
              outcome: failed(
                'gateway-refused',
                `the gateway refused the call (${res.status}): ${text.slice(0, 300)}`,
              ),
            };
          }
        } catch (err) {
          if (signal?.aborted)
            return { outcome: { type: 'stop', code: 'cancelled', message: 'the run was stopped' } };
          lastError = (err as Error).message;
        }
        await new Promise((r) => setTimeout(r, delay * Math.min(tryNo + 1, 5)));
      }
      return { outcome: failed('gateway-unreachable', `no gateway could serve the call: ${lastError}`) };
    },
  };
}
