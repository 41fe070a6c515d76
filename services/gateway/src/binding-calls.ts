import { counterSeriesByLabels, histogramSeriesByLabels } from '@islet/core';
import type { BindingCall, BindingOutcome } from '@islet/engine';
import {
  type CallSource,
  callEventData,
  createCallProcessor,
  decisionView,
  idempotencyKeyFor,
  operationIdFor,
  type StoredRun,
} from '@islet/runs';
import { APP_UNREACHABLE_MESSAGE, errorBody, failed } from './app-call-outcomes.ts';
import { AnswerTooLargeError, postToApp } from './app-http.ts';
import { appRequest } from './app-request.ts';
import { argumentProblemMessage, createArgumentCheck } from './argument-check.ts';
import type { Connection } from './connections.ts';
import type { GatewayDeps } from './deps.ts';
import { TOO_LARGE_MARK } from './guarded-fetch.ts';
import { httpAnswerOutcome } from './input-required.ts';
import { valueDepthExceeds } from './json-depth.ts';
import type { McpApps } from './mcp-apps.ts';

export { APP_UNREACHABLE_MESSAGE } from './app-call-outcomes.ts';

export interface ServedCall {
  outcome: BindingOutcome;
  deliverySeq?: number;
  /**
   * `JSON.stringify(outcome)` when this gateway journaled it (the text it sealed), for the answer's
   * text (`servedJson`); not part of the answer itself.
   */
  outcomeJson?: string;
}

/**
 * The answer's JSON for a served call, `prefix` (`{"index":1,"status":200,` or `{`) before its
 * fields: the same bytes as `JSON.stringify` of `{ ...prefix's fields, outcome, deliverySeq }`,
 * with the outcome's text reused when the journal step made it.
 */
export function servedJson(prefix: string, served: ServedCall): string {
  const outcome = served.outcomeJson ?? JSON.stringify(served.outcome);
  const seq = served.deliverySeq === undefined ? '' : `,"deliverySeq":${JSON.stringify(served.deliverySeq)}`;
  return `${prefix}"outcome":${outcome}${seq}}`;
}

type AppRequestText = ReturnType<typeof appRequest>;
type ProcessCallInput = Parameters<ReturnType<typeof createCallProcessor>['process']>[0];

export function createBindingCalls(deps: GatewayDeps, mcpApps?: McpApps) {
  const { runs, journal, decisions, connections, config, metrics, logger } = deps;
  const post = deps.postToApp ?? postToApp;
  const processor = createCallProcessor({ journal, decisions });
  const checkArguments = createArgumentCheck();
  // Each outcome's count and duration series, found once (core's metric-series.ts): prom-client's
  // own `inc(labels)` / `observe(labels, v)` check and key the labels every call, a hundred times a
  // hundred-call run. Outcome labels are a closed set (CallOutcomeLabel), so this stays small.
  const countCall = counterSeriesByLabels(metrics.bindingCalls);
  const observeCall = histogramSeriesByLabels(metrics.bindingCallDuration);

  async function httpCall(
    run: StoredRun,
    call: BindingCall,
    source: CallSource,
    connection: Connection,
    ctx: { idempotencyKey: string; operationId: string; input?: unknown },
    parsedArgs: { value: unknown } | undefined,
    /** The request as made while the claim was on its way (`prepareSoon`), for a call without input. */
    prepared: AppRequestText | undefined,
  ): Promise<BindingOutcome> {
    const { text: body, headers } =
      prepared && ctx.input === undefined
        ? prepared
        : appRequest(deps.sealer, run, call, source, connection, ctx, Date.now(), parsedArgs);
    let res: { status: number; text: string };
    try {
      res = await post(connection.url!, headers, body, {
        timeoutMs: config.ISLET_APP_CALL_TIMEOUT_MS,
        allowPrivate: config.ISLET_APP_ALLOW_PRIVATE_NETWORKS === 'true',
        maxResponseBytes: config.ISLET_APP_ANSWER_MAX_BYTES,
      });
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
    if (res.status < 200 || res.status > 299) {
      // The App's own words reach the program and the record (sealed with it), bounded.
      const said = errorBody(res.text);
      return failed('http-status', `the App answered HTTP ${res.status}${said.summary}`, {
        status: res.status,
        ...said.details,
      });
    }
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
    await deps.clientCalls.open(run.id, call.index, attempt);
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
    const answer = await deps.clientCalls.wait(run.id, call.index);
    return answer ?? failed('timeout', `the client did not answer call ${call.index} in time`);
  }

  // What a call needs from its run never changes after submit: kept briefly, and put in at submit
  // for a run this gateway admitted (call-run-cache.ts).
  const runCache = deps.callRuns;
  const readRun = (runId: string) => runs.get(runId);
  const immutableRun = (runId: string): Promise<StoredRun | null> => runCache.get(runId, readRun);

  // A binding's source, one object for all its calls (the run's spec object is cached with the
  // run): the journal serialises it once, not once a call.
  const sources = new WeakMap<object, CallSource>();
  const sourceOf = (spec: StoredRun['request']['bindings'][number]): CallSource => {
    let source = sources.get(spec);
    if (!source) {
      source = {
        connectionId: spec.connectionId,
        connectionName: spec.connectionName,
        name: spec.name,
        kind: spec.kind,
      };
      sources.set(spec, source);
    }
    return source;
  };

  // What the processor reads of a run, one object for all its calls (the run object is cached with
  // the run, as the binding's spec above): not one made a call.
  const processRuns = new WeakMap<StoredRun, ProcessCallInput['run']>();
  const processRunOf = (run: StoredRun): ProcessCallInput['run'] => {
    let view = processRuns.get(run);
    if (!view) {
      view = { id: run.id, tenant: run.tenant, mode: run.mode, toolCallId: run.callId, code: run.code };
      processRuns.set(run, view);
    }
    return view;
  };

  /** An `ask` call's decision hooks (call-processor.ts `onDecisionNeeded`, `onDecisionAnswered`). */
  const decisionHooks = (input: ProcessCallInput, run: StoredRun, index: number): void => {
    input.onDecisionNeeded = async (decision, created) => {
      await deps.lifecycle.suspend(run, { atCall: index });
      // Once per (run, index): an execution that meets its still-pending decision again (a
      // re-execution after a crash or stall) waits again but does not announce it twice.
      if (created) await runs.appendEvent(run.id, 'decision.needed', { ...decisionView(decision) });
    };
    input.onDecisionAnswered = async () => {
      await deps.lifecycle.resume(run);
    };
  };

  // Requests made while their calls' claims are on their way to Redis: one check-phase callback
  // for all the calls of a turn, queued after the journal's own (turn-batch.ts), so the claims'
  // script call is written first and the requests are made while Redis runs it and fsyncs.
  let preparing: (() => void)[] = [];
  const prepareAll = () => {
    const now = preparing;
    preparing = [];
    for (const prepare of now) prepare();
  };
  const prepareSoon = (prepare: () => void) => {
    if (preparing.push(prepare) === 1) setImmediate(prepareAll);
  };

  // The first binding of the run, or tool of the connection, by name: as `find`, without a closure
  // made for it each call.
  const bindingSpec = (run: StoredRun, binding: string) => {
    for (const b of run.request.bindings) if (b.binding === binding) return b;
    return undefined;
  };
  const toolNamed = (connection: Connection, name: string) => {
    for (const t of connection.tools) if (t.name === name) return t;
    return undefined;
  };

  /** Null when the run does not exist. */
  async function serve(
    runId: string,
    attempt: number,
    call: BindingCall & { takeover?: boolean },
    /** The client-gone signal, or what makes it when first asked (internal-call-path.ts `goneSignal`). */
    gone: AbortSignal | (() => AbortSignal),
  ): Promise<ServedCall | null> {
    const started = process.hrtime.bigint();
    const run = await immutableRun(runId);
    if (!run) return null;
    const spec = bindingSpec(run, call.binding);
    const source = spec && sourceOf(spec);
    const connection = spec ? await connections.get(run.tenant, spec.connectionId) : null;
    const tool = spec?.kind === 'tool' && connection ? toolNamed(connection, spec.name) : undefined;
    // The arguments parsed once for the check, the App's request and the call event (each parsed
    // them again); none of them changes the value. Text that is not JSON stays text, as
    // `jsonOrText` has it, and an App request of it fails in its own parse as before.
    let parsedArgs: { value: unknown } | undefined;
    try {
      parsedArgs = { value: JSON.parse(call.argsJson) };
    } catch {}
    const args = parsedArgs ? parsedArgs.value : call.argsJson;
    // Arguments that do not fit the tool's inputSchema are never sent, nor put to a person.
    const argumentProblems = tool ? checkArguments(tool.inputSchema, args) : undefined;
    // Reads (resources, prompts) are always allowed; a vanished connection or tool fails the call.
    let policy = tool?.policy ?? 'allow';
    if (argumentProblems && policy === 'ask') policy = 'allow';
    // A person allowed this tool for the whole session ("allow for the session"): no new ask.
    if (policy === 'ask' && spec) {
      if (await deps.sessions.granted(run.tenant, run.session, spec.connectionId, spec.name))
        policy = 'allow';
    }

    const callEvent = (outcome: BindingOutcome) => callEventData(call, source, outcome, started, args);
    const operationId = operationIdFor(run.id, call.index);
    // An allowed call to an http App is sent as soon as its claim is journaled, and what it sends
    // (the body, the connection's headers, the webhook signature) does not depend on the claim's
    // answer: it is made while the claim's script runs and fsyncs, not after its reply (README
    // round 32, call-cpu). Only in a run's first execution and not on a takeover: a later
    // execution replays journaled calls, and a taken-over call was sent already, so their claims
    // rarely come back `new` and the request would be thrown away.
    let prepared: AppRequestText | undefined;
    let sending = false;
    const prepareEarly =
      attempt === 1 &&
      !call.takeover &&
      policy === 'allow' &&
      !argumentProblems &&
      parsedArgs !== undefined &&
      spec !== undefined &&
      source !== undefined &&
      connection?.kind === 'http' &&
      (spec.kind !== 'tool' || tool !== undefined);
    const processCall: ProcessCallInput['call'] = {
      index: call.index,
      binding: call.binding,
      argsJson: call.argsJson,
    };
    if (source) processCall.source = source;
    const input: ProcessCallInput = {
      run: processRunOf(run),
      attempt,
      call: processCall,
      policy,
      approval: run.request.approval ?? 'stop',
      holdTimeoutMs: config.ISLET_DECISION_EXPIRE_MS,
      // A call an earlier attempt sent may still finish on a live gateway: wait for it before 'unknown'.
      unknownGraceMs: config.ISLET_APP_CALL_TIMEOUT_MS,
      takeover: call.takeover === true,
      operationId,
      // Read only by a held decision's wait: the fast path's signal is made then, if ever.
      signal: gone,
      // Not `async`: the App call's own promise, not one more that adopts it (two microtask hops
      // a call; round 40 `par-calls`). A throw here still rejects `process`, which awaits it.
      send: (ctx) => {
        sending = true;
        if (!spec || !source)
          return Promise.resolve(failed('unknown-binding', `the run has no binding "${call.binding}"`));
        if (!connection)
          return Promise.resolve(
            failed('connection-removed', `connection ${spec.connectionId} no longer exists`),
          );
        if (spec.kind === 'tool' && !tool)
          return Promise.resolve(
            failed('tool-removed', `${spec.name} is no longer a tool of ${connection.name}`),
          );
        if (argumentProblems)
          return Promise.resolve(
            failed('invalid-arguments', argumentProblemMessage(call.binding, argumentProblems), {
              errors: argumentProblems,
            }),
          );
        if (connection.kind === 'mcp') return mcpCall(run, call, connection, source, ctx);
        return connection.kind === 'http'
          ? httpCall(run, call, source, connection, ctx, parsedArgs, prepared)
          : clientCall(run, attempt, call, source, ctx);
      },
      // The console's and SSE's `call` event goes in with the outcome, in the journal's step
      // (built and sealed only in its sealed form: ISLET_CALL_ONE_SEAL, run-reads.ts `callEvent`).
      eventFor: (outcome) => runs.callEvent(run.id, () => callEvent(outcome), started),
    };
    // Read only by an `ask` call's decision: not made for the others (every allowed call).
    if (policy === 'ask') decisionHooks(input, run, call.index);
    const processing = processor.process(input);
    // `process` has handed the claim to the journal's turn batch by now (synchronously, before its
    // first await), so this is queued after the batch's send.
    if (prepareEarly && connection)
      prepareSoon(() => {
        if (sending || !source) return;
        try {
          prepared = appRequest(
            deps.sealer,
            run,
            call,
            source,
            connection,
            { idempotencyKey: idempotencyKeyFor(run.id, call.index), operationId },
            Date.now(),
            parsedArgs,
          );
        } catch {
          // Made again at the send, which fails there as it always did.
        }
      });
    const processed = await processing;

    const label = processed.label;
    countCall({ outcome: label });
    observeCall({ outcome: label }, Number(process.hrtime.bigint() - started) / 1e9);
    if (label !== 'replayed' && !processed.eventAppended)
      await runs.appendEvent(run.id, 'call', callEvent(processed.outcome));
    logger.debug({ runId, index: call.index, label }, 'binding call served');
    const out: ServedCall = { outcome: processed.outcome };
    if (processed.deliverySeq !== undefined) out.deliverySeq = processed.deliverySeq;
    if (processed.outcomeJson !== undefined) out.outcomeJson = processed.outcomeJson;
    return out;
  }

  return { serve };
}

export type BindingCalls = ReturnType<typeof createBindingCalls>;
