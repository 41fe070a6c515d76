/**
 * The run a submit stores, built from its request, its tenant's run policy and the platform
 * settings: its Apps resolved to bindings, its limits fixed, what its style does not have refused.
 * Used by runs-service.ts's submit.
 */

import { randomUUID } from 'node:crypto';
import { principalOf } from '@islet/core';
import {
  type ApprovalMode,
  RUN_CODE_LIMITS,
  type RunStyle,
  requestTimeoutMs,
  SANDBOX_MODES,
  type SandboxMode,
} from '@islet/protocol';
import { type BindingSpec, effectiveRunPolicy, type RunLimitsSnapshot, type StoredRun } from '@islet/runs';
import type { Caller } from './auth.ts';
import { bindingsOf } from './connections.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';
import { type RunCodeFields, runtimeCapabilities } from './run-request.ts';

export interface SubmitInput {
  fields: RunCodeFields;
  style?: RunStyle;
  sessionId?: string;
  turnId?: string;
  callId?: string;
  /** Absent: every connection of the tenant. */
  connections?: string[];
  approval?: ApprovalMode;
  /** A workflow principal asked for no deadline (`timeoutMs: null`). */
  noDeadline?: boolean;
}

/** The mode a run_code run has unless it asks for a wider one. */
const BASE_MODE: SandboxMode = 'read-only';

/** A submit's run, and whether Code Mode's switch is off for it. */
interface BuiltRun {
  run: StoredRun;
  codeModeOff: boolean;
}

function refuse(message: string): never {
  throw new HttpProblem('validation', message, { refusal: message });
}

export function createRunBuilder(deps: GatewayDeps) {
  const { config, settings, connections, runPolicies } = deps;

  /** The run's Apps: the connections it names, or (none named) every App of the tenant. */
  async function resolveBindings(tenant: string, ids: string[] | undefined): Promise<BindingSpec[]> {
    if (ids === undefined) return (await connections.list(tenant)).flatMap(bindingsOf);
    const out: BindingSpec[] = [];
    // Indexed over the ids once each (most submits name one: no set): a spread and a `for … of`
    // the JIT has not optimized allocate an iterator result an id.
    const unique = ids.length < 2 ? ids : Array.from(new Set(ids));
    for (let i = 0; i < unique.length; i++) {
      const id = unique[i]!;
      const c = await connections.get(tenant, id);
      if (!c)
        throw new HttpProblem('validation', `unknown connection: ${id}`, {
          errors: [{ path: 'connections', message: `unknown connection: ${id}` }],
        });
      out.push(...bindingsOf(c));
    }
    return out;
  }

  /**
   * `resolveBindings`' Apps from what the connections' cache holds and has read (`peek`), or
   * `undefined` when any is not there (then `resolveBindings`, which also refuses an unknown one).
   */
  function bindingsInHand(tenant: string, ids: string[] | undefined): BindingSpec[] | undefined {
    if (ids === undefined) return connections.peekList(tenant)?.flatMap(bindingsOf);
    const out: BindingSpec[] = [];
    const unique = ids.length < 2 ? ids : Array.from(new Set(ids));
    for (let i = 0; i < unique.length; i++) {
      const c = connections.peek(tenant, unique[i]!);
      if (c === undefined) return undefined;
      out.push(...bindingsOf(c));
    }
    return out;
  }

  /**
   * The run a submit stores, from its request, its tenant's run policy and the platform settings.
   * When the policy, the settings and the run's connections are all in the caches and read
   * (`peek`: the same freshness as their `get`'s hit), the run is built now, without a promise
   * (a refusal is then thrown, not a rejected promise); otherwise they are read (a miss, a read in
   * flight) and the run comes as a promise.
   */
  function buildRun(
    caller: Caller,
    id: string,
    input: SubmitInput,
    waits: boolean,
  ): BuiltRun | Promise<BuiltRun> {
    const tenant = caller.tenantId;
    const policy = runPolicies.peek?.(tenant);
    const current = policy && settings.peek?.();
    const bindings = current && bindingsInHand(tenant, input.connections);
    if (policy && current && bindings)
      return assemble(
        caller,
        id,
        input,
        waits,
        effectiveRunPolicy(policy, input.approval, input.style),
        current,
        bindings,
      );
    return buildRead(caller, id, input, waits);
  }

  async function buildRead(
    caller: Caller,
    id: string,
    input: SubmitInput,
    waits: boolean,
  ): Promise<BuiltRun> {
    const tenant = caller.tenantId;
    // Cached reads (settings-cache.ts, the run policy store).
    const [policy, current] = await Promise.all([
      runPolicies.effective(tenant, input.approval, input.style),
      settings.get(),
    ]);
    // The limits (and their refusals) before the connections are read, as ever.
    const limits = runLimits(policy.style, input, current);
    const bindings = await resolveBindings(tenant, input.connections);
    return assemble(caller, id, input, waits, policy, current, bindings, limits);
  }

  function assemble(
    caller: Caller,
    id: string,
    input: SubmitInput,
    waits: boolean,
    policy: Awaited<ReturnType<typeof runPolicies.effective>>,
    current: Awaited<ReturnType<typeof settings.get>>,
    bindings: BindingSpec[],
    limits = runLimits(policy.style, input, current),
  ): BuiltRun {
    const tenant = caller.tenantId;
    const principal = principalOf(caller);
    const session = input.sessionId ?? `session-${randomUUID()}`;
    const now = Date.now();
    const mode: SandboxMode = input.fields.sandbox_permissions ?? BASE_MODE;
    const run: StoredRun = {
      id,
      tenant,
      session,
      turn: input.turnId ?? `turn-${randomUUID()}`,
      callId: input.callId ?? `call-${randomUUID()}`,
      principal,
      status: 'Running',
      mode,
      code: input.fields.code,
      description: input.fields.description,
      request: {
        style: policy.style,
        limits,
        connections: input.connections ?? [...new Set(bindings.map((b) => b.connectionId))],
        bindings,
      },
      createdAt: now,
      updatedAt: now,
      attempts: 0,
      cancelRequested: false,
      clockMs: now,
      seed: id,
      ...(waits ? { pushEnd: true } : {}),
    };
    if (input.fields.timeoutMs !== undefined) run.request.timeoutMs = input.fields.timeoutMs;
    if (input.fields.sandbox_permissions) run.request.sandboxPermissions = input.fields.sandbox_permissions;
    if (input.fields.justification) run.request.justification = input.fields.justification;
    run.request.approval = policy.approval;
    run.request.timeBudget = policy.timeBudget;
    run.request.submittedBy = caller.keyId;
    if (policy.fourEyes) run.request.fourEyes = true;
    // Code Mode's switch governs Code Mode runs only; run_code runs are the run_code tool's.
    return { run, codeModeOff: policy.style === 'code-mode' && !current.codeMode.enabled };
  }

  /**
   * The limits the run executes under, fixed now (see RunLimitsSnapshot). Also refuses what the
   * style does not have: Code Mode programs have no files (so no sandbox modes) and take their time
   * from the platform settings; a run_code escalation must be wider than the run's mode.
   */
  function runLimits(
    style: RunStyle,
    input: SubmitInput,
    current: Awaited<ReturnType<typeof settings.get>>,
  ): RunLimitsSnapshot {
    const f = input.fields;
    if (style === 'code-mode') {
      if (f.sandbox_permissions !== undefined)
        refuse('sandbox_permissions belongs to run_code runs: Code Mode programs have no files');
      if (f.timeoutMs !== undefined || input.noDeadline)
        refuse(
          'timeoutMs belongs to run_code runs: a Code Mode run takes codeMode.timeoutMs from the platform settings',
        );
      return {
        timeoutMs: current.codeMode.timeoutMs,
        memoryMb: current.codeMode.memoryMb,
        outputBytes: current.codeMode.outputBytes,
        outputCap: 'separate',
        settingsVersion: current.version,
      };
    }
    if (f.sandbox_permissions !== undefined) {
      const asked = SANDBOX_MODES.indexOf(f.sandbox_permissions);
      if (asked <= SANDBOX_MODES.indexOf(BASE_MODE))
        refuse(
          `invalid escalation: sandbox_permissions ${f.sandbox_permissions} is not wider than the run's mode (${BASE_MODE})`,
        );
    }
    return {
      timeoutMs: input.noDeadline ? null : requestTimeoutMs(f, runtimeCapabilities(config)),
      memoryMb: RUN_CODE_LIMITS.memoryMb,
      outputBytes: RUN_CODE_LIMITS.outputBytes,
      outputCap: 'shared',
    };
  }

  return buildRun;
}
