/**
 * The gateway's side of the MCP surface (`@islet/mcp`): its runs, code API and skills behind the
 * narrow `McpHost` interface. Runs an MCP client starts use every connection of the tenant (the
 * agent reaches its Apps only from inside programs) and join the Islet session named by the MCP
 * session id.
 */

import type { McpCaller, McpHost, McpRunState } from '@islet/mcp';
import { RunCodeRequestSchema, unknownFieldsMessage, unknownFieldsOf } from '@islet/protocol';
import type { DecisionRequest, StoredRun } from '@islet/runs';
import type { Caller } from './auth.ts';
import { declareBindings } from './code-api.ts';
import { createDecisionsService } from './decisions-service.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';
import { parseRunCodeFields, RUN_FIELD_HINTS, runtimeCapabilities } from './run-request.ts';
import type { RunsService } from './runs-service.ts';
import { runtimeRulesText } from './runtime-rules.ts';
import { createSkillsService } from './skills-service.ts';

function summary(request: DecisionRequest): string {
  if (request.capability.action === 'sandbox.escalate')
    return `run with wider file access (${request.capability.target}): ${request.justification ?? ''}`;
  const args = request.app ? JSON.stringify(request.app.arguments) : '';
  return `call ${request.capability.target}${args ? ` with ${args.length > 500 ? `${args.slice(0, 500)}…` : args}` : ''}`;
}

const RUN_CODE_FIELDS = Object.keys(RunCodeRequestSchema.shape);

export function createMcpHost(deps: GatewayDeps, runsService: RunsService, closing: AbortSignal) {
  const skills = createSkillsService(deps, closing, runsService.claimSession);
  // The runs and decisions services read the tenant id, key id, principal and scopes from their caller.
  const asCaller = (c: McpCaller) => {
    const keyId = c.keyId ?? 'mcp';
    return {
      tenantId: c.tenantId,
      keyId,
      principal: c.principal ?? keyId,
      scopes: [...(c.scopes ?? [])],
    } as Caller;
  };
  const decisions = createDecisionsService(deps, runsService);

  async function state(run: StoredRun): Promise<McpRunState> {
    const decisions =
      run.status === 'Waiting'
        ? (await deps.decisions.listRun(run.id))
            .filter((d) => d.state === 'pending')
            .map((d) => ({ id: `${d.runId}:${d.index}`, index: d.index, summary: summary(d.request) }))
        : [];
    return {
      id: run.id,
      status: run.status,
      started: run.attempts > 0,
      record: await runsService.record(run),
      decisions,
    };
  }

  const host: McpHost = {
    parseRunCode(args) {
      const fields = parseRunCodeFields(args, runtimeCapabilities(deps.config));
      if (!fields.ok) return fields;
      const unknown = unknownFieldsOf(args, RUN_CODE_FIELDS, RUN_FIELD_HINTS);
      return unknown.length > 0 ? { ok: false, refusal: unknownFieldsMessage(unknown) } : fields;
    },
    async codeModeAvailable(caller) {
      const [settings, connections] = await Promise.all([
        deps.settings.get(),
        deps.connections.list(caller.tenantId),
      ]);
      return settings.codeMode.enabled && connections.length > 0;
    },
    async runtimeRules(caller) {
      return runtimeRulesText(deps.config, await deps.connections.list(caller.tenantId));
    },
    runs: {
      async get(caller, runId) {
        return state(await runsService.own(asCaller(caller), runId));
      },
      async submit(caller, input) {
        const tenant = await deps.tenants.getTenant(caller.tenantId);
        if (!tenant) throw new HttpProblem('unauthorized', "the key's tenant no longer exists");
        const connections = (await deps.connections.list(caller.tenantId)).map((c) => c.id);
        const keyId = caller.keyId ?? 'mcp';
        const identity = {
          tenantId: caller.tenantId,
          tenant,
          keyId,
          principal: caller.principal ?? keyId,
          scopes: [...(caller.scopes ?? [])],
        } as Caller;
        const { run } = await runsService.submit(
          identity,
          {
            fields: input.fields,
            sessionId: input.sessionId,
            turnId: 'mcp',
            callId: input.callId,
            connections,
            // Each document's rules (limits, approvals, bindings): the run's style decides them all.
            style: input.style,
          },
          undefined,
          // The MCP tools wait for the run's end after starting it.
          { waits: true },
        );
        return state(run);
      },
      async wait(caller, runId, ms, signal) {
        // The run as read is what a lean pushed end leaves out (runs-service.ts `waitForEnd`).
        const known = await runsService.own(asCaller(caller), runId);
        const run = await runsService.waitForEnd(runId, ms, signal, undefined, known);
        if (!run) throw new HttpProblem('not-found', `no code run ${runId}`);
        return state(run);
      },
      async decide(caller, runId, index, allow) {
        await decisions.answer(asCaller(caller), runId, { index, allow });
      },
      async cancel(caller, runId) {
        await runsService.cancel(asCaller(caller), runId).catch((err) => {
          if (!(err instanceof HttpProblem)) throw err;
        });
      },
    },
    async codeApi(caller, filter) {
      const connections = await deps.connections.list(caller.tenantId);
      const out = declareBindings(connections, filter);
      // The rules the declarations cannot say, as a comment above them.
      const rules = runtimeRulesText(deps.config)
        .split('\n')
        .map((l) => ` * ${l}`)
        .join('\n');
      return { ...out, declarations: `/**\n${rules}\n */\n${out.declarations}` };
    },
    async skill(caller, request, sessionId) {
      // The caller carries its tenant: the tenant's in-flight quota counts skills too.
      const tenant = await deps.tenants.getTenant(caller.tenantId);
      return skills.execute({
        caller: { ...asCaller(caller), ...(tenant ? { tenant } : {}) } as Caller,
        mode: 'workspace-write',
        skill: request,
        sessionId,
      });
    },
  };
  return { host, close: () => skills.close() };
}
