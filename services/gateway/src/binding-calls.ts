/**
 * Serves one binding call from a runner. The order that makes "never sent twice" hold lives in
 * `@islet/runs`'s call processor (claim → policy → decision → markSent → App call → complete);
 * this module supplies what only the gateway knows: which connection and tool a binding is, its
 * policy, and how the App is reached (`http`: POST to its URL; `client`: the call goes out on the
 * run's event stream and the caller answers, possibly through another gateway replica, via Redis).
 */
import { channels, keys } from '@islet/core';
import type { BindingCall, BindingOutcome } from '@islet/engine';
import { isFinalStatus } from '@islet/protocol';
import {
  type CallSource,
  createCallProcessor,
  DEFAULT_MAX_EVENTS_PER_RUN,
  decisionView,
  type StoredRun,
} from '@islet/runs';
import { AnswerTooLargeError, postToApp } from './app-http.ts';
import type { Connection } from './connections.ts';
import type { GatewayDeps } from './deps.ts';
import { TOO_LARGE_MARK } from './guarded-fetch.ts';
import { httpAnswerOutcome } from './input-required.ts';
import { valueDepthExceeds } from './json-depth.ts';
import type { McpApps } from './mcp-apps.ts';
import { outcomeRecord } from './record.ts';

const failed = (reason: string, message: string, extra: Record<string, unknown> = {}): BindingOutcome => ({
  type: 'error',
  name: 'AppCallFailed',
  message,
  details: { reason, ...extra },
});

/**
 * What the program learns when the App cannot be reached, whatever the cause (refused, reset,
 * timeout, DNS failure, blocked address): one text, so a tenant cannot map the platform's network
 * or tell open ports from closed ones. The real reason goes to the gateway's log.
 */
export const APP_UNREACHABLE_MESSAGE = 'the App could not be reached or did not answer in time';

export interface ServedCall {
  outcome: BindingOutcome;
  deliverySeq?: number;
}

export function createBindingCalls(deps: GatewayDeps, mcpApps?: McpApps) {
  const { runs, journal, decisions, connections, config, metrics, logger } = deps;
  const post = deps.postToApp ?? postToApp;
  const processor = createCallProcessor({ journal, decisions });

  async function httpCall(
    run: StoredRun,
    call: BindingCall,
    source: CallSource,
    url: string,
    ctx: { idempotencyKey: string; operationId: string; input?: unknown },
  ): Promise<BindingOutcome> {
    const body: Record<string, unknown> = {
      tool: source.name,
      kind: source.kind,
      arguments: JSON.parse(call.argsJson),
    };
    if (ctx.input !== undefined) body.input = ctx.input;
    let res: { status: number; text: string };
    try {
      res = await post(
        url,
        {
          'content-type': 'application/json',
          'idempotency-key': ctx.idempotencyKey,
          'x-islet-run': run.id,
          'x-islet-operation-id': ctx.operationId,
        },
        JSON.stringify(body),
        {
          timeoutMs: config.ISLET_APP_CALL_TIMEOUT_MS,
          allowPrivate: config.ISLET_APP_ALLOW_PRIVATE_NETWORKS === 'true',
          maxResponseBytes: config.ISLET_APP_ANSWER_MAX_BYTES,
        },
      );
    } catch (err) {
      const e = err as Error;
      if (e instanceof AnswerTooLargeError)
        return failed(
          'answer-too-large',
          `the App's answer is larger than ${e.maxBytes} bytes, the most a call may return`,
          { maxBytes: e.maxBytes },
        );
      logger.warn(
        { runId: run.id, index: call.index, connectionId: source.connectionId, err: e },
        'App call failed before an answer',
      );
      return failed('unreachable', APP_UNREACHABLE_MESSAGE);
    }
    if (res.status < 200 || res.status > 299)
      return failed('http-status', `the App answered HTTP ${res.status}`, { status: res.status });
    return httpAnswerOutcome(res.text, ctx.operationId, config.ISLET_JSON_MAX_DEPTH);
  }

  async function mcpCall(
    run: StoredRun,
    call: BindingCall,
    connection: Connection,
    source: CallSource,
    ctx: { idempotencyKey: string; operationId: string },
  ): Promise<BindingOutcome> {
    if (!mcpApps) return failed('unavailable', 'this gateway does not serve mcp connections');
    const uri =
      source.kind === 'resource' ? connection.resources.find((r) => r.name === source.name)?.uri : undefined;
    try {
      const answer = await mcpApps.call(run.tenant, connection, {
        kind: source.kind,
        name: source.name,
        ...(uri ? { uri } : {}),
        args: JSON.parse(call.argsJson),
        idempotencyKey: ctx.idempotencyKey,
        operationId: ctx.operationId,
      });
      if (answer.type === 'error') return failed(answer.reason, answer.message, answer.details ?? {});
      const maxDepth = config.ISLET_JSON_MAX_DEPTH;
      if (valueDepthExceeds(answer.value, maxDepth))
        return failed('too-deep', `the App's answer nests deeper than ${maxDepth} levels`, { maxDepth });
      return { type: 'result', valueJson: JSON.stringify(answer.value ?? null) };
    } catch (err) {
      const e = err as Error & { code?: unknown };
      const max = config.ISLET_APP_ANSWER_MAX_BYTES;
      if (e instanceof AnswerTooLargeError || e.message.includes(TOO_LARGE_MARK))
        return failed(
          'answer-too-large',
          `the App's answer is larger than ${max} bytes, the most a call may return`,
          {
            maxBytes: max,
          },
        );
      // A JSON-RPC error from the server (unknown tool, bad arguments) is an answer, not an outage
      // (-32001 is the SDK's own request timeout, which is one).
      if (typeof e.code === 'number' && e.code !== -32001)
        return failed('mcp-error', e.message, { code: e.code });
      logger.warn(
        { runId: run.id, index: call.index, connectionId: source.connectionId, err: e },
        'MCP App call failed before an answer',
      );
      return failed('unreachable', APP_UNREACHABLE_MESSAGE);
    }
  }

  async function clientCall(
    run: StoredRun,
    attempt: number,
    call: BindingCall,
    source: CallSource,
    ctx: { idempotencyKey: string; operationId: string; input?: unknown },
  ): Promise<BindingOutcome> {
    const pendingKey = keys.clientCallPending(run.id, call.index);
    const resultKey = keys.clientCallResult(run.id, call.index);
    const ttl = Math.ceil(config.ISLET_CLIENT_CALL_TIMEOUT_MS / 1000) + 60;
    await deps.redis.set(pendingKey, String(attempt), 'EX', ttl);
    const event: Record<string, unknown> = {
      index: call.index,
      binding: call.binding,
      source,
      operationId: ctx.operationId,
      idempotencyKey: ctx.idempotencyKey,
      arguments: JSON.parse(call.argsJson),
      answer: `/v1/code-runs/${run.id}/calls/${call.index}/result`,
    };
    if (ctx.input !== undefined) event.input = ctx.input;
    await runs.appendEvent(run.id, 'call.requested', event);
    // BLPOP blocks its connection, so each waiting call gets its own; short slices let it notice a
    // run that ended. A runner that went away does not stop the wait: the answer still gets
    // journaled, and the run's next execution replays it instead of finding an unknown outcome.
    const blocking = deps.blockingRedis();
    const deadline = Date.now() + config.ISLET_CLIENT_CALL_TIMEOUT_MS;
    try {
      while (Date.now() < deadline) {
        const got = await blocking.blpop(
          resultKey,
          Math.max(0.1, Math.min(2, (deadline - Date.now()) / 1000)),
        );
        if (got) return JSON.parse(deps.sealer.open(got[1])) as BindingOutcome;
        const status = await deps.redis.hget(keys.run(run.id), 'status');
        if (status === null || isFinalStatus(status)) break;
      }
      await deps.redis.del(pendingKey);
      return failed('timeout', `the client did not answer call ${call.index} in time`);
    } finally {
      blocking.disconnect();
    }
  }

  // What a call needs from its run (tenant, mode, program, bindings, approval) never changes after
  // submit, so it is cached briefly: a program's many calls cost one record read, not one each.
  // The read itself is shared, so a burst of parallel calls (Promise.all) waits on one read.
  const runCache = new Map<string, { run: Promise<StoredRun | null>; at: number }>();
  function immutableRun(runId: string): Promise<StoredRun | null> {
    const hit = runCache.get(runId);
    if (hit && Date.now() - hit.at < 30_000) return hit.run;
    const run = runs.get(runId);
    if (runCache.size >= 1000) runCache.delete(runCache.keys().next().value as string);
    const entry = { run, at: Date.now() };
    runCache.set(runId, entry);
    // Only a run that exists stays cached.
    run.then(
      (r) => {
        if (!r && runCache.get(runId) === entry) runCache.delete(runId);
      },
      () => {
        if (runCache.get(runId) === entry) runCache.delete(runId);
      },
    );
    return run;
  }

  /** Null when the run does not exist. */
  async function serve(
    runId: string,
    attempt: number,
    call: BindingCall & { takeover?: boolean },
    signal: AbortSignal,
  ): Promise<ServedCall | null> {
    const started = process.hrtime.bigint();
    const run = await immutableRun(runId);
    if (!run) return null;
    const spec = run.request.bindings.find((b) => b.binding === call.binding);
    const source: CallSource | undefined = spec && {
      connectionId: spec.connectionId,
      connectionName: spec.connectionName,
      name: spec.name,
      kind: spec.kind,
    };
    const connection = spec ? await connections.get(run.tenant, spec.connectionId) : null;
    const tool = spec?.kind === 'tool' ? connection?.tools.find((t) => t.name === spec.name) : undefined;
    // Reads (resources, prompts) are always allowed; a vanished connection or tool fails the call.
    let policy = tool?.policy ?? 'allow';
    // A person allowed this tool for the whole session ("allow for the session"): no new ask.
    if (policy === 'ask' && spec) {
      const grant = keys.sessionGrant(run.tenant, run.session, spec.connectionId, spec.name);
      if ((await deps.redis.exists(grant)) === 1) policy = 'allow';
    }

    const callEvent = (outcome: BindingOutcome) => ({
      index: call.index,
      binding: call.binding,
      ...(source ? { source } : {}),
      outcome: outcomeRecord(outcome),
      // For the console's call list (the record has neither); sealed like every event.
      arguments: jsonOrText(call.argsJson),
      durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
    });
    const processed = await processor.process({
      run: { id: run.id, tenant: run.tenant, mode: run.mode, toolCallId: run.callId, code: run.code },
      attempt,
      call: {
        index: call.index,
        binding: call.binding,
        argsJson: call.argsJson,
        ...(source ? { source } : {}),
      },
      policy,
      approval: run.request.approval ?? 'stop',
      holdTimeoutMs: config.ISLET_DECISION_EXPIRE_MS,
      // A call an earlier attempt sent may still finish on a live gateway: wait for it before 'unknown'.
      unknownGraceMs: config.ISLET_APP_CALL_TIMEOUT_MS,
      ...(call.takeover ? { takeover: true } : {}),
      signal,
      send: async (ctx) => {
        if (!spec || !source) return failed('unknown-binding', `the run has no binding "${call.binding}"`);
        if (!connection)
          return failed('connection-removed', `connection ${spec.connectionId} no longer exists`);
        if (spec.kind === 'tool' && !tool)
          return failed('tool-removed', `${spec.name} is no longer a tool of ${connection.name}`);
        if (connection.kind === 'mcp') return mcpCall(run, call, connection, source, ctx);
        return connection.kind === 'http'
          ? httpCall(run, call, source, connection.url!, ctx)
          : clientCall(run, attempt, call, source, ctx);
      },
      onDecisionNeeded: async (decision, created) => {
        await runs.setStatus(run, 'Waiting', { atCall: call.index });
        // Once per (run, index): an execution that meets its still-pending decision again (a
        // re-execution after a crash or stall) waits again but does not announce it twice.
        if (created) await runs.appendEvent(run.id, 'decision.needed', { ...decisionView(decision) });
      },
      onDecisionAnswered: async () => {
        await runs.setStatus(run, 'Running');
      },
      // The console's and SSE's `call` event goes in with the outcome, in the journal's step.
      eventFor: (outcome) => ({
        streamKey: keys.runEvents(run.id),
        maxLen: DEFAULT_MAX_EVENTS_PER_RUN,
        type: 'call',
        sealedData: deps.sealer.seal(JSON.stringify(callEvent(outcome))),
        channel: channels.runEvents,
        // Tagged: SSE readers wake for it, `Prefer: wait` requests know it is not the end.
        message: `${run.id} call`,
      }),
    });

    const label = processed.label;
    metrics.bindingCalls.inc({ outcome: label });
    metrics.bindingCallDuration.observe({ outcome: label }, Number(process.hrtime.bigint() - started) / 1e9);
    if (label !== 'replayed' && !processed.eventAppended)
      await runs.appendEvent(run.id, 'call', callEvent(processed.outcome));
    logger.debug({ runId, index: call.index, label }, 'binding call served');
    const out: ServedCall = { outcome: processed.outcome };
    if (processed.deliverySeq !== undefined) out.deliverySeq = processed.deliverySeq;
    return out;
  }

  return { serve };
}

export type BindingCalls = ReturnType<typeof createBindingCalls>;

function jsonOrText(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}
