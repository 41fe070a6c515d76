/**
 * Generated from the gateway’s OpenAPI document by services/sdk/src/codegen/generate.ts.
 * Do not edit: run `bash scripts/toolchain.sh node services/sdk/src/codegen/generate.ts`.
 */

export interface paths {
  "/console": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** The web console (redirects to /console/) */
    get: operations["getConsole"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/console/board-session": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** A 15-minute cookie scoped to /queues that opens the queue board */
    post: operations["postConsoleBoardSession"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/console/{path}": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** The web console and its assets (strict Content-Security-Policy) */
    get: operations["getConsolePath"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/healthz": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Liveness */
    get: operations["getHealthz"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/internal/v1/code-runs/{id}/call-batch": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** The calls an execution made together, in one request */
    post: operations["postInternalV1CodeRunsByIdCallBatch"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/internal/v1/code-runs/{id}/calls": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** The runner → gateway binding-call channel */
    post: operations["postInternalV1CodeRunsByIdCalls"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/mcp": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** No server-initiated stream */
    get: operations["getMcp"];
    put?: never;
    /** MCP over Streamable HTTP */
    post: operations["postMcp"];
    /** End the MCP session (Mcp-Session-Id) */
    delete: operations["deleteMcp"];
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/metrics": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Prometheus metrics */
    get: operations["getMetrics"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/openapi.json": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** This description */
    get: operations["getOpenapiJson"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/readyz": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Readiness (Redis reachable) */
    get: operations["getReadyz"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/admin/tenants": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List tenants */
    get: operations["getV1AdminTenants"];
    put?: never;
    /** Create a tenant */
    post: operations["postV1AdminTenants"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/admin/tenants/{id}/keys": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List a tenant's API keys */
    get: operations["getV1AdminTenantsByIdKeys"];
    put?: never;
    /** Create an API key */
    post: operations["postV1AdminTenantsByIdKeys"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/admin/tenants/{id}/keys/{keyId}": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    post?: never;
    /** Revoke an API key */
    delete: operations["deleteV1AdminTenantsByIdKeysByKeyId"];
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/admin/tenants/{id}/keys/{keyId}/rotate": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** Rotate an API key */
    post: operations["postV1AdminTenantsByIdKeysByKeyIdRotate"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/admin/tenants/{id}/mcp": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** A tenant's MCP tools and the effective list */
    get: operations["getV1AdminTenantsByIdMcp"];
    /** Set a tenant's MCP tools */
    put: operations["putV1AdminTenantsByIdMcp"];
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/admin/tenants/{id}/run-policy": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** A tenant's run policy and the effective rules */
    get: operations["getV1AdminTenantsByIdRunPolicy"];
    /** Set a tenant's run policy */
    put: operations["putV1AdminTenantsByIdRunPolicy"];
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/code-api": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** TypeScript declarations of the bindings a run sees */
    get: operations["getV1CodeApi"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/code-runs/{id}": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Read a code run */
    get: operations["getV1CodeRunsById"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/code-runs/{id}/calls/{index}/result": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** Answer a client-connection call */
    post: operations["postV1CodeRunsByIdCallsByIndexResult"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/code-runs/{id}/cancel": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** Cancel a run wherever it executes */
    post: operations["postV1CodeRunsByIdCancel"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/code-runs/{id}/decisions": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** Answer a decision once */
    post: operations["postV1CodeRunsByIdDecisions"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/code-runs/{id}/events": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Server-Sent Events of a run */
    get: operations["getV1CodeRunsByIdEvents"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/connections": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List connections */
    get: operations["getV1Connections"];
    put?: never;
    /** Register a connection (an App) */
    post: operations["postV1Connections"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/connections/{id}": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Read a connection */
    get: operations["getV1ConnectionsById"];
    put?: never;
    post?: never;
    /** Remove a connection */
    delete: operations["deleteV1ConnectionsById"];
    options?: never;
    head?: never;
    /** Edit a connection in place */
    patch: operations["patchV1ConnectionsById"];
    trace?: never;
  };
  "/v1/connections/{id}/signing-secret/rotate": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** Rotate an http connection’s Standard Webhooks signing secret */
    post: operations["postV1ConnectionsByIdSigningSecretRotate"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/decisions": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** The tenant's pending decisions */
    get: operations["getV1Decisions"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/events": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** The tenant's live feed (SSE): runs and decisions */
    get: operations["getV1Events"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/health": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Health over the last hour, 10 s buckets */
    get: operations["getV1Health"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/platform/settings": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Platform settings */
    get: operations["getV1PlatformSettings"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    /** Change settings */
    patch: operations["patchV1PlatformSettings"];
    trace?: never;
  };
  "/v1/runs": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List the tenant's runs, newest first */
    get: operations["getV1Runs"];
    put?: never;
    /** Submit a run */
    post: operations["postV1Runs"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/sessions": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List the tenant's sessions by last activity */
    get: operations["getV1Sessions"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/sessions/{id}/files": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List a session's workspace files, one page in path order */
    get: operations["getV1SessionsByIdFiles"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/sessions/{id}/files/{path}": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Read a workspace file */
    get: operations["getV1SessionsByIdFilesPath"];
    /** Write a workspace file */
    put: operations["putV1SessionsByIdFilesPath"];
    post?: never;
    /** Delete a workspace file */
    delete: operations["deleteV1SessionsByIdFilesPath"];
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/sessions/{sessionId}/code-runs": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** List a session's runs, newest first */
    get: operations["getV1SessionsBySessionIdCodeRuns"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/sessions/{sessionId}/events": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Server-Sent Events of a whole session */
    get: operations["getV1SessionsBySessionIdEvents"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/skills/run_code": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get?: never;
    put?: never;
    /** Run a python, javascript or bash program (the run_code skill) */
    post: operations["postV1SkillsRunCode"];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/tools": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** The caller's tools as definitions, generated from the same zod schemas as /mcp */
    get: operations["getV1Tools"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  "/v1/usage": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    /** Usage per tenant and UTC day */
    get: operations["getV1Usage"];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}

export type webhooks = Record<string, never>;

export interface components {
  schemas: {
    CodeRun: {
      id: string;
      session: string;
      turn: string;
      callId: string;
      status: "Running" | "Waiting" | "Completed" | "Failed" | "Cancelled";
      code: string;
      reason: string;
      calls: ({
        index: number;
        binding: string;
        source?: {
          connectionId: string;
          connectionName: string;
          name: string;
          kind: "tool" | "resource" | "prompt";
        };
        operationId: string;
        outcome: {
          _tag: "Pending";
        } | {
          _tag: "Waiting";
        } | {
          _tag: "Done";
          result: {
            _tag: "Completed";
            value: unknown;
          } | {
            _tag: "Failed";
            error: {
              name: "AppCallDenied" | "AppCallFailed" | "AppInputRequired";
              message: string;
              details?: {
                [key: string]: unknown;
              };
            };
          } | {
            _tag: "Stopped";
            code: string;
            message: string;
          };
        };
      })[];
      result?: {
        _tag: "Completed";
        value?: unknown;
        logs: ({
          level: "log" | "info" | "warn" | "error" | "debug";
          text: string;
        })[];
      } | {
        _tag: "Failed";
        reason: "Error" | "Timeout" | "Memory" | "OutputTooLarge" | "ReplayMismatch" | "Cancelled" | "Unavailable";
        kind?: "exception" | "timeout" | "abort" | "worker-exit" | "invalid-output" | "output-limit" | "protocol" | "sandbox-unavailable";
        message: string;
        logs: ({
          level: "log" | "info" | "warn" | "error" | "debug";
          text: string;
        })[];
        detail?: string;
        line?: number;
        column?: number;
        stack?: string;
      };
      createdAt: number;
      updatedAt: number;
      text?: string;
      style?: "run_code" | "code-mode";
      limits?: {
        timeoutMs: number | null;
        memoryMb: number;
        outputBytes: number;
        outputCap: "shared" | "separate";
        settingsVersion?: number;
      };
    };
    CodeRunPage: {
      items: ({
        id: string;
        session: string;
        turn: string;
        callId: string;
        status: "Running" | "Waiting" | "Completed" | "Failed" | "Cancelled";
        code: string;
        reason: string;
        calls: ({
          index: number;
          binding: string;
          source?: {
            connectionId: string;
            connectionName: string;
            name: string;
            kind: "tool" | "resource" | "prompt";
          };
          operationId: string;
          outcome: {
            _tag: "Pending";
          } | {
            _tag: "Waiting";
          } | {
            _tag: "Done";
            result: {
              _tag: "Completed";
              value: unknown;
            } | {
              _tag: "Failed";
              error: {
                name: "AppCallDenied" | "AppCallFailed" | "AppInputRequired";
                message: string;
                details?: {
                  [key: string]: unknown;
                };
              };
            } | {
              _tag: "Stopped";
              code: string;
              message: string;
            };
          };
        })[];
        result?: {
          _tag: "Completed";
          value?: unknown;
          logs: ({
            level: "log" | "info" | "warn" | "error" | "debug";
            text: string;
          })[];
        } | {
          _tag: "Failed";
          reason: "Error" | "Timeout" | "Memory" | "OutputTooLarge" | "ReplayMismatch" | "Cancelled" | "Unavailable";
          kind?: "exception" | "timeout" | "abort" | "worker-exit" | "invalid-output" | "output-limit" | "protocol" | "sandbox-unavailable";
          message: string;
          logs: ({
            level: "log" | "info" | "warn" | "error" | "debug";
            text: string;
          })[];
          detail?: string;
          line?: number;
          column?: number;
          stack?: string;
        };
        createdAt: number;
        updatedAt: number;
        text?: string;
        style?: "run_code" | "code-mode";
        limits?: {
          timeoutMs: number | null;
          memoryMb: number;
          outputBytes: number;
          outputCap: "shared" | "separate";
          settingsVersion?: number;
        };
      })[];
      /** Pass as ?cursor= for the next page; null on the last. */
      nextCursor: string | null;
    };
    Connection: {
      id: string;
      kind: string;
      name: string;
      slug: string;
      /** Names of the sealed headers; values are never returned. */
      headers?: (string)[];
      /** http connections: that requests are signed (never a secret) */
      signing?: {
        scheme: string;
        secrets: number;
        [key: string]: unknown;
      };
      /** What a program calls: apps.<slug>.<tool> */
      bindings: (string)[];
      [key: string]: unknown;
    };
    ConnectionInput: {
      name: string;
      kind: "http" | "client" | "mcp";
      url?: string;
      headers?: {
        [key: string]: string;
      };
      tools?: ({
        name: string;
        description?: string;
        inputSchema?: {
          [key: string]: unknown;
        };
        outputSchema?: {
          [key: string]: unknown;
        };
        policy?: "allow" | "ask" | "deny";
      })[];
      resources?: ({
        name: string;
        description?: string;
        uri?: string;
        arguments?: ({
          name: string;
          description?: string;
          required?: boolean;
        })[];
      })[];
      prompts?: ({
        name: string;
        description?: string;
        uri?: string;
        arguments?: ({
          name: string;
          description?: string;
          required?: boolean;
        })[];
      })[];
    };
    Decision: {
      /** <run>:<index> */
      id: string;
      state: "pending" | "allowed" | "denied" | "expired";
      capability: {
        action: "apps.call" | "sandbox.escalate";
        target: string;
      };
      toolCallId: string;
      app?: {
        id: string;
        callId: string;
        arguments: unknown;
      };
      code: {
        run: string;
        /** -1: the run’s wider-access request */
        index: number;
        code: string;
      };
      justification?: string;
      /** hold: the program waits in place; stop: the run stopped and is replayed */
      approval: string;
      requestedAt: number;
      expiresAt: number;
      [key: string]: unknown;
    };
    DecisionAnswer: {
      index: number;
      allow: boolean;
      input?: unknown;
      scope?: "once" | "session";
      reason?: string;
    };
    McpSettings: {
      tools?: {
        run_code?: {
          enabled?: boolean;
          name?: string;
          description?: string;
        };
        code_api?: {
          enabled?: boolean;
          name?: string;
          description?: string;
        };
        code_run?: {
          enabled?: boolean;
          name?: string;
          description?: string;
        };
        skill?: {
          enabled?: boolean;
          name?: string;
          description?: string;
        };
      };
    };
    Problem: {
      /** https://islet.dev/problems/<code> */
      type: string;
      title: string;
      status: number;
      detail?: string;
      code?: "validation" | "malformed-json" | "unsupported-media-type" | "payload-too-large" | "unauthorized" | "forbidden" | "four-eyes" | "json-too-deep" | "not-found" | "method-not-allowed" | "conflict" | "unsupported-file-type" | "reserved-connection-name" | "invalid-binding-name" | "version-conflict" | "idempotency-conflict" | "run-finished" | "call-not-pending" | "rate-limited" | "quota-exceeded" | "connection-quota-exceeded" | "storage-quota-exceeded" | "app-unreachable" | "unavailable" | "internal";
      errors?: ({
        path?: string;
        message?: string;
      })[];
      [key: string]: unknown;
    };
    RotateSigningSecret: {
      previousSecretExpiresInSeconds?: number;
    };
    RunPolicy: {
      style?: "code-mode" | "run_code";
      approval?: "hold" | "stop";
      timeBudget?: "elapsed" | "excluding-binding-waits";
      fourEyes?: boolean;
    };
    /** A run. The style decides which document's rules apply:
     * 
     * | | run_code (000) | code-mode (003) |
     * | --- | --- | --- |
     * | chosen by | `style: "run_code"` (the default) | `style: "code-mode"` |
     * | required fields | `code`, `description` (000) | `code`, `description` |
     * | time budget | `timeoutMs`, default 120000, ceiling 600000 or lower (000) | platform setting `codeMode.timeoutMs` (003) |
     * | time counted | elapsed, App calls and decisions included (000) | waiting for App calls excluded (003) |
     * | no deadline | `timeoutMs: null`, `workflows` scope only (000) | never |
     * | memory | 512 MiB heap (000) | platform setting `codeMode.memoryMb` (003) |
     * | output | 67108864 bytes shared by lines and value; over it: `output-limit`, fitting part kept (000) | `codeMode.outputBytes`: logs past it are cut and the run goes on; a larger value is `OutputTooLarge` (003) |
     * | a call needing a decision | holds in place inside the budget (000) | stops the run; replayed from the top after the decision (003) |
     * | files and sandbox modes | `apps.files.*`, `sandbox_permissions` + `justification` (000) | none: "no network, no files" (003) |
     * | Apps | `connections`, else every App of the tenant | `connections`, else every App of the tenant (the Apps of the Turn, 003) |
     * | switched off | never by Code Mode settings | `codeMode.enabled` (off on a fresh install, 003): `Unavailable` |
     * | limits fixed | at acceptance (`limits` in the record) | at acceptance, with `limits.settingsVersion`; every replay uses them (003) | */
    RunRequest: {
      /** The program: the body of an async function. */
      code: string;
      /** Five to ten words in active voice. */
      description: string;
      /** run_code only: time budget in ms (default 120000, capped at the ceiling). null = no deadline, for a principal with the workflows scope. */
      timeoutMs?: number | null;
      /** run_code only: a mode wider than the run's (read-only); asks for a decision first. */
      sandbox_permissions?: "read-only" | "workspace-write" | "danger-full-access";
      /** With sandbox_permissions: one sentence shown before the run. */
      justification?: string;
      /** run_code (document 000) or code-mode (document 003); default: the tenant's run policy (run_code). */
      style?: "code-mode" | "run_code";
      /** Generated when absent. */
      sessionId?: string;
      /** Generated when absent. */
      turnId?: string;
      /** Generated when absent. */
      callId?: string;
      /** Connection ids whose Apps the program may call; absent: every App of the tenant. */
      connections?: (string)[];
      approval?: "hold" | "stop";
    };
    SettingsPatch: {
      expectedVersion: number;
      codeMode: {
        enabled?: boolean;
        timeoutMs?: number;
        memoryMb?: number;
        outputBytes?: number;
      };
    };
    SkillRequest: {
      language: "python" | "javascript" | "bash";
      code: string;
      timeout?: number;
      /** The program's working directory is this session's workspace (else a scratch dir). */
      sessionId?: string;
      /** Default workspace-write. danger-full-access needs an approved run (POST /v1/runs). */
      sandbox_permissions?: "read-only" | "workspace-write";
    };
    SkillResult: {
      /** True if the program exited 0 */
      success: boolean;
      /** Captured stdout: the first 1 MiB (the program is not stopped for printing more) */
      output: string;
      /** Captured stderr (or error message) */
      error: string;
      /** Process exit code (124: timeout, 127: interpreter missing) */
      exitCode: number;
      language: "python" | "javascript" | "bash";
    };
  };
  responses: never;
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
}

export type $defs = Record<string, never>;

export interface operations {
  /** The web console (redirects to /console/) */
  getConsole: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Redirect */
      302: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  postConsoleBoardSession: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Cookie set */
      204: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** The web console and its assets (strict Content-Security-Policy) */
  getConsolePath: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** The file path in the workspace (slashes allowed) */
        path: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** HTML, JS, CSS */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "text/html": string;
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Liveness */
  getHealthz: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** ok */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            status: string;
          };
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** {attempt, calls: [{index, binding, argsJson}]} (1 to 1000) → one NDJSON line per call as soon as it is journaled. */
  postInternalV1CodeRunsByIdCallBatch: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          attempt: number;
          calls: ({
            index: number;
            [key: string]: unknown;
          })[];
          [key: string]: unknown;
        };
      };
    };
    responses: {
      /** One line per call */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/x-ndjson": string;
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** {attempt, index, binding, argsJson, takeover?} → {outcome, deliverySeq?}. Bearer ISLET_INTERNAL_TOKEN; served on ISLET_INTERNAL_PORT alone when that is set. */
  postInternalV1CodeRunsByIdCalls: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          attempt: number;
          index: number;
          binding: string;
          argsJson: string;
          [key: string]: unknown;
        };
      };
    };
    responses: {
      /** The journaled outcome */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            outcome: unknown;
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Conflict; The run has already ended */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  getMcp: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Method not allowed */
      405: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** initialize opens a session (Mcp-Session-Id, also the Islet session of its runs); tools/list, tools/call; notifications/cancelled cancels the run. Needs scope apps.use. */
  postMcp: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          jsonrpc: "2.0";
          method: string;
          [key: string]: unknown;
        };
      };
    };
    responses: {
      /** JSON-RPC answer (JSON or an event stream) */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  deleteMcp: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Ended */
      200: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Prometheus metrics */
  getMetrics: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Text exposition format */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "text/plain": string;
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** This description */
  getOpenapiJson: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** OpenAPI 3.1 */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            openapi: string;
            [key: string]: unknown;
          };
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Readiness (Redis reachable) */
  getReadyz: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** ready */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            status: string;
          };
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  getV1AdminTenants: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Every tenant */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            items: ({
              id: string;
              name: string;
              rateLimitPerMinute?: number;
              maxInFlightRuns?: number;
              [key: string]: unknown;
            })[];
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  postV1AdminTenants: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          id?: string;
          name: string;
          rateLimitPerMinute?: number;
          maxInFlightRuns?: number;
        };
      };
    };
    responses: {
      /** Created */
      201: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            id: string;
            name: string;
            rateLimitPerMinute?: number;
            maxInFlightRuns?: number;
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Conflict */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** id, prefix, scopes, principal, created, lastUsed, expiresAt (ms or null); never a secret. Needs scope platform.admin. */
  getV1AdminTenantsByIdKeys: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The keys */
      200: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** The key belongs to the principal (default: itself); it is shown once. Needs scope platform.admin. */
  postV1AdminTenantsByIdKeys: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          scopes: ("apps.use" | "sessions.read" | "decisions" | "platform.admin" | "sessions.admin" | "workflows")[];
          principal?: string;
          expiresAt?: number | string;
        };
      };
    };
    responses: {
      /** Created */
      201: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            /** Shown once; only its SHA-256 is stored. */
            key: string;
            keyId: string;
            principal: string;
            tenantId: string;
            scopes: ("apps.use" | "sessions.read" | "decisions" | "platform.admin" | "sessions.admin" | "workflows")[];
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Refused at once on every gateway; its open event streams end with `key-revoked`. Needs scope platform.admin. */
  deleteV1AdminTenantsByIdKeysByKeyId: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
        keyId: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Revoked */
      204: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** {graceSeconds?}: a new secret for the same key id; the old one works through the grace (default 0). Needs scope platform.admin. */
  postV1AdminTenantsByIdKeysByKeyIdRotate: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
        keyId: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The new secret */
      201: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  getV1AdminTenantsByIdMcp: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The settings */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            effective: {
              [key: string]: unknown;
            };
            [key: string]: unknown;
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  putV1AdminTenantsByIdMcp: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["McpSettings"];
      };
    };
    responses: {
      /** The settings as saved */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            effective: {
              [key: string]: unknown;
            };
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  getV1AdminTenantsByIdRunPolicy: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The policy */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            effective: {
              [key: string]: unknown;
            };
            [key: string]: unknown;
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope platform.admin. */
  putV1AdminTenantsByIdRunPolicy: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["RunPolicy"];
      };
    };
    responses: {
      /** The policy as saved */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            effective: {
              [key: string]: unknown;
            };
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** The Apps a run without `connections` sees, plus for run_code the built-in files.read/write/list/remove. `Accept: application/typescript` answers the declarations alone. Needs scope apps.use. */
  getV1CodeApi: {
    parameters: {
      query?: {
        q?: string;
        connection?: string;
        style?: "code-mode" | "run_code";
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Declarations and bindings */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            /** TypeScript declarations of the bindings */
            declarations: string;
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  getV1CodeRunsById: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The record */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["CodeRun"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** {"result": …}, {"error": {"message": …, "reason"?: …}} (the program gets AppCallFailed), or {"inputRequired": {"message": "<non-empty text>"}} (the program gets AppInputRequired with details.operationId). Needs scope apps.use. */
  postV1CodeRunsByIdCallsByIndexResult: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
        index: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          result: unknown;
        } | {
          error: {
            message: string;
            reason?: string;
          };
        } | {
          inputRequired: {
            message: string;
          };
        };
      };
    };
    responses: {
      /** Taken; the program continues */
      202: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            accepted: true;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The call is not waiting for a client result */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  postV1CodeRunsByIdCancel: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The record after the cancel was taken */
      202: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["CodeRun"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The run has already ended */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** index -1 = the run’s wider-access request; a second answer is 409. Needs scope decisions. */
  postV1CodeRunsByIdDecisions: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["DecisionAnswer"];
      };
    };
    responses: {
      /** The decision as answered */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["Decision"];
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope; Another API key must approve this run */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Conflict */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Each event has `id` (the stream entry), `event` (status, call, call.requested, decision.needed, decision.answered, end…) and JSON `data`; the stream ends after `end`. Resumable with Last-Event-ID on any gateway. Needs scope apps.use. */
  getV1CodeRunsByIdEvents: {
    parameters: {
      query?: never;
      header?: {
        /** Resume after this event id (also `?lastEventId=`). */
        "Last-Event-ID"?: string;
      };
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** text/event-stream until the `end` event */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "text/event-stream": string;
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  getV1Connections: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The tenant’s connections */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            items: ({
              id: string;
              kind: string;
              name: string;
              slug: string;
              /** Names of the sealed headers; values are never returned. */
              headers?: (string)[];
              /** http connections: that requests are signed (never a secret) */
              signing?: {
                scheme: string;
                secrets: number;
                [key: string]: unknown;
              };
              /** What a program calls: apps.<slug>.<tool> */
              bindings: (string)[];
              [key: string]: unknown;
            })[];
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** The slug `files` is 400 reserved-connection-name; a name the engine refuses as a binding name is 400 invalid-binding-name; a slug clash is 409 conflict; an mcp server that cannot be listed is 502 app-unreachable. Needs scope apps.use. */
  postV1Connections: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["ConnectionInput"];
      };
    };
    responses: {
      /** Registered; Location: /v1/connections/{id}. An http connection’s signingSecret is shown here once. */
      201: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            id: string;
            kind: string;
            name: string;
            slug: string;
            /** Names of the sealed headers; values are never returned. */
            headers?: (string)[];
            /** http connections: that requests are signed (never a secret) */
            signing?: {
              scheme: string;
              secrets: number;
              [key: string]: unknown;
            };
            /** What a program calls: apps.<slug>.<tool> */
            bindings: (string)[];
            /** http connections: the Standard Webhooks secret (whsec_…), shown once; verify App requests with it. */
            signingSecret?: string;
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply; The connection or capability name is reserved; The name cannot be a binding name */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Conflict */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The App could not be reached or did not answer as expected */
      502: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  getV1ConnectionsById: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The connection */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["Connection"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  deleteV1ConnectionsById: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Removed */
      204: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** `url`, the `headers` of an http or mcp connection (replaced whole; sealed, never returned), and named tools' `policy` (allow / ask / deny) or `description`. The name stays: it is the binding prefix programs call. Needs scope apps.use. */
  patchV1ConnectionsById: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": {
          url?: string;
          headers?: {
            [key: string]: string;
          };
          tools?: ({
            name: string;
            policy?: "allow" | "ask" | "deny";
            description?: string;
          })[];
        };
      };
    };
    responses: {
      /** The connection as changed */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["Connection"];
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** The new secret is returned once; the previous one keeps signing (both signatures sent) for previousSecretExpiresInSeconds (default 86400, 0: stops at once). See "Write an App" above. Needs scope apps.use. */
  postV1ConnectionsByIdSigningSecretRotate: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["RotateSigningSecret"];
      };
    };
    responses: {
      /** The new secret (shown once) */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            /** The new secret, shown once */
            signingSecret: string;
            /** Until when (ms since the epoch) the previous secret still signs */
            previousExpiresAt?: number;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope decisions. */
  getV1Decisions: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Pending decisions, Code Mode request shape */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            items: ({
              /** <run>:<index> */
              id: string;
              state: "pending" | "allowed" | "denied" | "expired";
              capability: {
                action: "apps.call" | "sandbox.escalate";
                target: string;
              };
              toolCallId: string;
              app?: {
                id: string;
                callId: string;
                arguments: unknown;
              };
              code: {
                run: string;
                /** -1: the run’s wider-access request */
                index: number;
                code: string;
              };
              justification?: string;
              /** hold: the program waits in place; stop: the run stopped and is replayed */
              approval: string;
              requestedAt: number;
              expiresAt: number;
              [key: string]: unknown;
            })[];
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Events run, decision (decisions scope), ready, key-revoked; resumable with Last-Event-ID. Needs scope apps.use + sessions.read. */
  getV1Events: {
    parameters: {
      query?: never;
      header?: {
        /** Resume after this event id (also `?lastEventId=`). */
        "Last-Event-ID"?: string;
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** text/event-stream; heartbeats while idle */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "text/event-stream": string;
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** minutes (1-60, default 60). Runs ended per second and by status, p50/p99 latency (creation to end), failures by kind, queue depth, runner slots busy, decisions pending; gauges are null where no gateway sampled. sessions.admin for the own tenant; platform.admin for the whole cluster (queue depth and slots per mode) or `tenant`. */
  getV1Health: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Series, one value per bucket of `t` */
      200: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Platform settings */
  getV1PlatformSettings: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The settings and their version */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            version: number;
            codeMode: {
              enabled: boolean;
              timeoutMs: number;
              memoryMb: number;
              outputBytes: number;
            };
            [key: string]: unknown;
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** 409 version-conflict when expectedVersion is stale (the answer carries the current settings). Needs scope platform.admin. */
  patchV1PlatformSettings: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["SettingsPatch"];
      };
    };
    responses: {
      /** The settings as saved */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            version: number;
            codeMode: {
              enabled: boolean;
              timeoutMs: number;
              memoryMb: number;
              outputBytes: number;
            };
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The settings changed since expectedVersion */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Filters limit (1-200), cursor, status (repeatable), sessionId, principal, since/until, q, style (run_code, code-mode, skill), tenant (platform.admin). Summaries, no code or logs; unknown parameters and malformed cursors are 400 naming the parameter. Needs scope apps.use + sessions.read. */
  getV1Runs: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** One page */
      200: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Only code and description are required; style run_code (default) or code-mode. The answer is the run record; `Location: /v1/code-runs/{id}`. Needs scope apps.use. */
  postV1Runs: {
    parameters: {
      query?: never;
      header?: {
        /** The same key with the same body answers the run it started (idempotent-replayed: true), never a second run; with another body 409 idempotency-conflict. */
        "Idempotency-Key"?: string;
        /** `wait=N`: hold the answer up to N seconds (capped by the deployment) and answer 200 with the final record if the run ends in time. */
        Prefer?: string;
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["RunRequest"];
      };
    };
    responses: {
      /** The run ended within Prefer: wait */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["CodeRun"];
        };
      };
      /** Accepted; still Running or Waiting (follow /v1/code-runs/{id}/events) */
      202: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["CodeRun"];
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The Idempotency-Key was used with another request */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests; Too many runs in flight */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** limit, cursor, principal, since/until, tenant (platform.admin); run counts by status. Needs scope apps.use + sessions.read. */
  getV1Sessions: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** One page */
      200: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Regular files only (symlinks, FIFOs, sockets, devices are not listed). Needs scope apps.use. */
  getV1SessionsByIdFiles: {
    parameters: {
      query?: {
        /** A directory (everything under it) or a file */
        prefix?: string;
        limit?: number;
        /** nextCursor of the previous page (opaque) */
        cursor?: string;
      };
      header?: never;
      path: {
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** One page */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            files: ({
              path: string;
              sizeBytes: number;
              modifiedAtMs: number;
            })[];
            /** Absent on the last page. */
            nextCursor?: string;
          };
        };
      };
      /** The request is not valid */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** A FIFO, socket or device is 409 unsupported-file-type; a symlink is 400 (outside-workspace). Needs scope apps.use. */
  getV1SessionsByIdFilesPath: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
        /** The file path in the workspace (slashes allowed) */
        path: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** The bytes */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/octet-stream": string;
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Only regular files and directories are served */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** The body is the raw bytes (≤ 10 MiB). Over the workspace limits (100 MiB, 1000 files) 409 conflict, reason workspace-full. Needs scope apps.use. */
  putV1SessionsByIdFilesPath: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
        /** The file path in the workspace (slashes allowed) */
        path: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/octet-stream": string;
      };
    };
    responses: {
      /** Written */
      201: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            path: string;
            sizeBytes: number;
          };
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Conflict */
      409: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  deleteV1SessionsByIdFilesPath: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        id: string;
        /** The file path in the workspace (slashes allowed) */
        path: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Deleted */
      204: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** A session belongs to the principal that opened it: other principals see it empty unless their key has sessions.admin. Needs scope apps.use + sessions.read. */
  getV1SessionsBySessionIdCodeRuns: {
    parameters: {
      query?: {
        cursor?: string;
        limit?: number;
      };
      header?: never;
      path: {
        sessionId: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** One page */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["CodeRunPage"];
        };
      };
      /** The request is not valid */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** A `run` event {id, status, reason, createdAt, updatedAt, failure?} per latest run, then one whenever a run appears or changes. Needs scope sessions.read. */
  getV1SessionsBySessionIdEvents: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        sessionId: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** text/event-stream; heartbeats while idle */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "text/event-stream": string;
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Not found */
      404: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** On the mode's runner pool, under its kernel profile, in the session's workspace when sessionId is given. Needs scope apps.use. */
  postV1SkillsRunCode: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        "application/json": components["schemas"]["SkillRequest"];
      };
    };
    responses: {
      /** The program ended (successfully or not) */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": components["schemas"]["SkillResult"];
        };
      };
      /** The request is not valid; The body is not valid JSON; The JSON body is nested too deeply */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body is too large */
      413: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The body must be application/json */
      415: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** Needs scope apps.use. */
  getV1Tools: {
    parameters: {
      query?: {
        format?: "mcp" | "openai" | "anthropic";
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Tool definitions in the format asked for */
      200: {
        headers: { [name: string]: unknown };
        content: {
          "application/json": {
            format: string;
            [key: string]: unknown;
          };
        };
      };
      /** The request is not valid */
      400: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The API key lacks a required scope */
      403: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
  /** from, to (YYYY-MM-DD); sessions.admin for the own tenant, platform.admin for all or `tenant`. */
  getV1Usage: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** Usage per day */
      200: {
        headers: { [name: string]: unknown };
        content: never;
      };
      /** A valid API key is required */
      401: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Too many requests */
      429: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** Internal error */
      500: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
      /** The service is not available */
      503: {
        headers: { [name: string]: unknown };
        content: {
          "application/problem+json": components["schemas"]["Problem"];
        };
      };
    };
  };
}
