/**
 * A small typed client for Islet's HTTP API. Errors come back as `IsletApiError` carrying the
 * problem+json body, so callers branch on `problem.type`, never on text.
 */
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

export interface SubmitRun {
  code: string;
  description: string;
  /** `run_code` (document 000) or `code-mode` (document 003); default: the tenant's run policy. */
  style?: 'run_code' | 'code-mode';
  /** Generated when absent. */
  sessionId?: string;
  turnId?: string;
  callId?: string;
  /** Absent: every App of the tenant. */
  connections?: string[];
  timeoutMs?: number;
  sandbox_permissions?: 'read-only' | 'workspace-write' | 'danger-full-access';
  justification?: string;
}

export interface CodeRun {
  id: string;
  session: string;
  turn: string;
  callId: string;
  status: 'Running' | 'Waiting' | 'Completed' | 'Failed' | 'Cancelled';
  code: string;
  reason: string;
  calls: unknown[];
  result?:
    | { _tag: 'Completed'; value?: unknown; logs: unknown[] }
    | { _tag: 'Failed'; reason: string; message: string; logs: unknown[] };
  text?: string;
  createdAt: number;
  updatedAt: number;
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
    const res = await doFetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${options.key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok)
      throw new IsletApiError(
        (parsed as Problem) ?? { type: 'about:blank', title: res.statusText, status: res.status },
      );
    return parsed as T;
  }
  return {
    call,
    /** Submits a run; with `waitSeconds` the answer is the finished record when it ends in time. */
    submitRun: (run: SubmitRun, opts: { waitSeconds?: number; idempotencyKey?: string } = {}) =>
      call<CodeRun>('POST', '/v1/runs', run, {
        ...(opts.waitSeconds ? { prefer: `wait=${opts.waitSeconds}` } : {}),
        ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
      }),
    getRun: (id: string) => call<CodeRun>('GET', `/v1/code-runs/${encodeURIComponent(id)}`),
    cancelRun: (id: string) => call<CodeRun>('POST', `/v1/code-runs/${encodeURIComponent(id)}/cancel`),
    listSessionRuns: (sessionId: string, cursor?: string) =>
      call<{ items: CodeRun[]; nextCursor: string | null }>(
        'GET',
        `/v1/sessions/${encodeURIComponent(sessionId)}/code-runs${cursor ? `?cursor=${cursor}` : ''}`,
      ),
    createTenant: (t: { id?: string; name: string; rateLimitPerMinute?: number; maxInFlightRuns?: number }) =>
      call<{ id: string; name: string }>('POST', '/v1/admin/tenants', t),
    createKey: (tenantId: string, scopes: string[], principal?: string, expiresAt?: number) =>
      call<{ key: string; keyId: string; principal: string; tenantId: string; scopes: string[] }>(
        'POST',
        `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys`,
        { scopes, ...(principal ? { principal } : {}), ...(expiresAt !== undefined ? { expiresAt } : {}) },
      ),
    listKeys: (tenantId: string) =>
      call<{ items: ApiKeyListing[] }>('GET', `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys`),
    /** True when revoked, false when the tenant has no such key. */
    revokeKey: async (tenantId: string, keyId: string) => {
      try {
        await call<unknown>(
          'DELETE',
          `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys/${encodeURIComponent(keyId)}`,
        );
        return true;
      } catch (err) {
        if (err instanceof IsletApiError && err.problem.status === 404) return false;
        throw err;
      }
    },
    rotateKey: (tenantId: string, keyId: string, graceSeconds: number) =>
      call<{ key: string; keyId: string; previousExpiresAt?: number }>(
        'POST',
        `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys/${encodeURIComponent(keyId)}/rotate`,
        { graceSeconds },
      ),
  };
}

/** A key as `GET /v1/admin/tenants/{id}/keys` lists it (never its secret); times in ms. */
export interface ApiKeyListing {
  id: string;
  prefix: string;
  scopes: string[];
  principal: string;
  created: number;
  lastUsed: number | null;
  expiresAt: number | null;
  previousExpiresAt?: number;
}

export type IsletClient = ReturnType<typeof createIsletClient>;
