/**
 * One MCP server instance per HTTP request (the gateway is stateless; the session lives in Redis):
 * `tools/list` from the tenant's settings, `tools/call` for the four surfaces, and every other
 * tool name refused as code-call mode requires. A run's MCP request id is recorded so that a
 * `notifications/cancelled` arriving on another request (or replica) cancels the run.
 */
import { isFinalStatus, parseRunCodeRequest, parseSkillRequest, type RunCodeRequest } from '@islet/protocol';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  ListToolsRequestSchema,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { McpCaller, McpHost, McpRunState, McpRunStyle } from './host.ts';
import { type McpSettings, type ResolvedTool, resolveTools } from './mcp-settings.ts';
import type { McpStore } from './mcp-store.ts';
import { mcpTool } from './tool-definitions.ts';
import { codeApiInput, codeRunInput, jsonSchemaOf } from './tool-schemas.ts';

/** How often a waiting tool call reports progress when nothing changed, ms. */
const PROGRESS_HEARTBEAT_MS = 5_000;
/** The longest a tool call waits for its run: the run_code ceiling plus time in the queue, ms. */
const RUN_WAIT_CAP_MS = 660_000;

/** Ids of Islet's own server→client requests, so their answers are told apart from the SDK's. */
export const ELICITATION_ID_PREFIX = 'islet-elicit-';
export const ELICITATION_POLL_MS = 200;
/** How long a person may take to answer an elicitation before the call answers with the decision id. */
export const ELICITATION_TIMEOUT_MS = 300_000;

export type Elicit = (
  params: { message: string; requestedSchema: Record<string, unknown> },
  relatedRequestId: RequestId,
  signal: AbortSignal,
) => Promise<
  { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> | undefined } | undefined
>;

interface IsletMcpServerOptions {
  host: McpHost;
  caller: McpCaller;
  sessionId: string;
  settings: McpSettings;
  /** Which run each JSON-RPC request started (a cancel may reach another replica). */
  requestRuns: McpStore['requestRuns'];
  /** Aborted when the gateway closes: waits end, runs go on (they are not the client's to lose). */
  closing: AbortSignal;
  version: string;
  /** Set when the client declared the elicitation capability: decisions are asked through it. */
  elicit?: Elicit;
  /** The gateway's origin as the client reached it, for links to the console (`…/console/#/runs/<id>`). */
  origin?: string;
}

/** Fetches a run's result later: the answer a run_code call gave, for a run that was still going. */
const GET_RUN_TOOL = 'get_run';
const getRunInput = z.strictObject({
  runId: z.string().min(1).max(200).describe('The run id a run_code answer named.'),
  waitSeconds: z
    .number()
    .int()
    .min(0)
    .max(60)
    .optional()
    .describe('Wait up to this many seconds for the run to end or to need a decision (default 0).'),
});

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});

/** The answer to a direct call of a tool that is not offered (document 000's code-call mode). */
export function directCallRefusal(name: string, tools: ResolvedTool[], binding?: string): string {
  const runner = tools.find((t) => t.surface === 'run_code') ?? tools.find((t) => t.surface === 'code_run');
  const api = tools.find((t) => t.surface === 'code_api');
  if (!runner) return `tool "${name}" is not offered here`;
  const call = binding ? `await apps.${binding}(args)` : 'await apps.<connection>.<capability>(args)';
  return (
    `tool "${name}" cannot be called directly: in code-call mode only ${runner.name} is called directly. ` +
    `Reach that tool from inside a program instead: call ${runner.name} with code that calls it, as in \`${call}\`` +
    (api ? `; ${api.name} shows the bindings and their arguments.` : '.')
  );
}

export function decisionText(state: McpRunState, origin?: string): string {
  const d = state.decisions[0];
  const what = d && d.index >= 0 ? `call ${d.index} of the program` : 'its wider file access';
  const index = d?.index ?? 0;
  return (
    `The run ${state.id} is waiting for a decision on ${what}` +
    (d ? ` (decision ${d.id})` : '') +
    `; nothing more runs until it is answered. Answer it with POST /v1/code-runs/${state.id}/decisions ` +
    `{"index": ${index}, "allow": true} (or "allow": false) using an API key with the "decisions" scope. ` +
    `The run then continues (calls that already ran are replayed, never sent twice); read its result with the ${GET_RUN_TOOL} tool or GET /v1/code-runs/${state.id}.` +
    (origin
      ? ` A person can answer it on the run's console page: ${origin}/console/#/runs/${encodeURIComponent(state.id)}`
      : '')
  );
}

export function createIsletMcpServer(o: IsletMcpServerOptions): Server {
  const { host, caller, sessionId, requestRuns } = o;
  const tools = resolveTools(o.settings);
  const server = new Server(
    { name: 'islet', version: o.version },
    {
      capabilities: { tools: {} },
      instructions:
        'Islet runs programs that call your tools. Write a program and run it with the run-code tool; reach every other tool from inside that program.',
    },
  );

  // Code Mode's tools only where Code Mode can run: on in the platform settings, and Apps to call.
  const CODE_MODE_SURFACES = new Set(['code_api', 'code_run']);
  const offered = async () => {
    const codeMode = await host.codeModeAvailable(caller);
    return tools.filter((t) => codeMode || !CODE_MODE_SURFACES.has(t.surface));
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const list = await offered();
    const rules = list.some((t) => t.surface === 'run_code') ? await host.runtimeRules(caller) : '';
    return {
      tools: [
        ...list.map((t) => {
          const tool = mcpTool(t);
          return t.surface === 'run_code'
            ? { ...tool, description: `${tool.description}\n\n${rules}` }
            : tool;
        }),
        {
          name: GET_RUN_TOOL,
          description:
            "Reads a run's result later: for a run that was still running or waiting for a decision when its run_code (or Code Mode) call answered. Gives the same answer that call would have given.",
          inputSchema: jsonSchemaOf(getRunInput, 'input'),
          annotations: { readOnlyHint: true, openWorldHint: false },
        },
      ],
    };
  });

  server.setNotificationHandler(CancelledNotificationSchema, async (n) => {
    const requestId = n.params.requestId;
    if (requestId === undefined) return;
    const runId = await requestRuns.get(sessionId, String(requestId));
    if (runId) await host.runs.cancel(caller, runId).catch(() => undefined);
  });

  async function runAndWait(fields: RunCodeRequest, style: McpRunStyle, extra: Extra) {
    let state = await host.runs.submit(caller, {
      fields,
      sessionId,
      callId: `mcp-${String(extra.requestId)}`,
      style,
    });
    await requestRuns.set(sessionId, String(extra.requestId), state.id);
    const token = extra._meta?.progressToken;
    let progress = 0;
    const report = async (s: McpRunState) => {
      if (token === undefined) return;
      const message =
        s.status === 'Waiting'
          ? `run ${s.id} waits for a decision`
          : isFinalStatus(s.status)
            ? `run ${s.id} ended: ${s.status}`
            : `run ${s.id} ${s.started ? 'running' : 'queued'}`;
      progress += 1;
      await extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress, message },
        })
        .catch(() => undefined);
    };
    // The client gave up on the call (cancelled it, or closed the connection): the run stops too.
    const cancel = () => void host.runs.cancel(caller, state.id).catch(() => undefined);
    extra.signal.addEventListener('abort', cancel, { once: true });
    const waitSignal = AbortSignal.any([extra.signal, o.closing]);
    const deadline = Date.now() + RUN_WAIT_CAP_MS;
    const asked = new Set<string>();
    try {
      await report(state);
      for (;;) {
        while (
          !isFinalStatus(state.status) &&
          state.status !== 'Waiting' &&
          !waitSignal.aborted &&
          Date.now() < deadline
        ) {
          state = await host.runs.wait(caller, state.id, PROGRESS_HEARTBEAT_MS, waitSignal);
          await report(state);
        }
        const pending = state.decisions.find((d) => !asked.has(d.id));
        if (state.status !== 'Waiting' || !pending || waitSignal.aborted) break;
        asked.add(pending.id);
        if (!(await askPerson(state, pending, extra, waitSignal))) break;
        // The answer lands asynchronously (a replay is queued, or the held call resumes).
        for (let i = 0; i < 50 && !waitSignal.aborted; i++) {
          state = await host.runs.wait(caller, state.id, 0, waitSignal);
          if (state.status !== 'Waiting' || state.decisions.some((d) => !asked.has(d.id))) break;
          await new Promise((r) => setTimeout(r, ELICITATION_POLL_MS));
        }
      }
    } finally {
      extra.signal.removeEventListener('abort', cancel);
    }
    return state;
  }

  /**
   * Asks the person behind the client through MCP elicitation (when the client can and the key may
   * decide). True when the decision was answered; false leaves it pending for the text answer.
   */
  async function askPerson(
    state: McpRunState,
    d: McpRunState['decisions'][number],
    extra: Extra,
    signal: AbortSignal,
  ): Promise<boolean> {
    if (!o.elicit || !caller.scopes?.includes('decisions')) return false;
    const answer = await o
      .elicit(
        {
          message: `Islet run ${state.id} needs your decision: ${d.summary}. Allow it?`,
          requestedSchema: {
            type: 'object',
            properties: {
              allow: { type: 'boolean', title: 'Allow', description: 'Allow this and let the run go on' },
            },
            required: ['allow'],
          },
        },
        extra.requestId,
        signal,
      )
      .catch(() => undefined);
    if (!answer || answer.action === 'cancel') return false;
    const allow = answer.action === 'accept' && answer.content?.allow === true;
    return host.runs.decide(caller, state.id, d.index, allow).then(
      () => true,
      () => false,
    );
  }

  const stillRunning = (s: McpRunState) =>
    text(
      `The run ${s.id} is still ${s.started ? 'running' : 'queued'}; read its result with GET /v1/code-runs/${s.id}.`,
    );

  async function runCode(args: Record<string, unknown>, extra: Extra): Promise<CallToolResult> {
    // The same validation as POST /v1/runs, this deployment's runtime switches included.
    const parsed = host.parseRunCode(args);
    if (!parsed.ok) return text(parsed.refusal, true);
    return runCodeAnswer(await runAndWait(parsed.value, 'run_code', extra));
  }

  function runCodeAnswer(state: McpRunState): CallToolResult {
    const meta = { _meta: { 'dev.islet/run': { id: state.id, status: state.status } } };
    if (state.status === 'Waiting') return { ...text(decisionText(state, o.origin)), ...meta };
    if (!isFinalStatus(state.status)) return { ...stillRunning(state), ...meta };
    return { ...text(state.record.text ?? '', state.status !== 'Completed'), ...meta };
  }

  async function codeRun(args: Record<string, unknown>, extra: Extra): Promise<CallToolResult> {
    const input = codeRunInput.safeParse(args);
    if (!input.success) return text(input.error.issues.map((i) => i.message).join('; '), true);
    const parsed = parseRunCodeRequest({
      code: input.data.code,
      description: input.data.reason?.trim() || 'Code Mode program',
    });
    if (!parsed.ok) return text(parsed.refusal, true);
    return codeRunAnswer(await runAndWait(parsed.value, 'code-mode', extra));
  }

  function codeRunAnswer(state: McpRunState): CallToolResult {
    const result = state.record.result;
    const structured: Record<string, unknown> = {
      runId: state.id,
      status: state.status,
      logs: result?.logs ?? [],
      calls: state.record.calls,
    };
    if (result?._tag === 'Completed' && result.value !== undefined) structured.value = result.value;
    if (result?._tag === 'Failed') {
      structured.reason = result.reason;
      structured.message = result.message;
    }
    const d = state.decisions[0];
    if (state.status === 'Waiting' && d)
      structured.decision = { id: d.id, index: d.index, answer: decisionText(state, o.origin) };
    return {
      content: [{ type: 'text', text: JSON.stringify(structured) }],
      structuredContent: structured,
      ...(state.status === 'Failed' || state.status === 'Cancelled' ? { isError: true } : {}),
    };
  }

  async function codeApi(args: Record<string, unknown>): Promise<CallToolResult> {
    const input = codeApiInput.safeParse(args);
    if (!input.success) return text(input.error.issues.map((i) => i.message).join('; '), true);
    const filter: { q?: string; connection?: string } = {};
    if (input.data.q) filter.q = input.data.q;
    if (input.data.connection) filter.connection = input.data.connection;
    const out = await host.codeApi(caller, filter);
    return text(out.declarations);
  }

  async function skill(args: Record<string, unknown>): Promise<CallToolResult> {
    const parsed = parseSkillRequest(args);
    if (!parsed.ok) return text(parsed.message, true);
    const result = await host.skill(caller, parsed.value, sessionId);
    return {
      content: [{ type: 'text', text: JSON.stringify(result) }],
      structuredContent: { ...result },
    };
  }

  async function getRun(args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const input = getRunInput.safeParse(args);
    if (!input.success)
      return text(input.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '), true);
    let state: McpRunState;
    try {
      state = input.data.waitSeconds
        ? await host.runs.wait(caller, input.data.runId, input.data.waitSeconds * 1000, signal)
        : await host.runs.get(caller, input.data.runId);
    } catch {
      return text(`no run ${input.data.runId}`, true);
    }
    return state.record.style === 'code-mode' ? codeRunAnswer(state) : runCodeAnswer(state);
  }

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (name === GET_RUN_TOOL) return getRun(args, extra.signal);
    const tool = (await offered()).find((t) => t.name === name);
    if (!tool && tools.some((t) => t.name === name))
      return text(
        `${name} is not offered: Code Mode is off on this platform, or this tenant has no Apps`,
        true,
      );
    if (!tool) {
      // Name the binding when the agent called one of its App tools by name.
      const { bindings } = await host.codeApi(caller, {});
      const wanted = name.replace(/__/g, '.');
      const hit = bindings.find((b) => b.binding === wanted || b.binding.endsWith(`.${name}`));
      return text(directCallRefusal(name, tools, hit?.binding), true);
    }
    try {
      switch (tool.surface) {
        case 'run_code':
          return await runCode(args, extra);
        case 'code_run':
          return await codeRun(args, extra);
        case 'code_api':
          return await codeApi(args);
        case 'skill':
          return await skill(args);
      }
    } catch (err) {
      // The host's refusals (quota, rate limit, no runner) reach the model as a tool error it can read.
      return text(`${tool.name} could not run: ${(err as Error).message}`, true);
    }
  });

  return server;
}
