/**
 * The gateway's side of the MCP surface (`@islet/mcp`): its runs, code API and skills behind the
 * narrow `McpHost` interface. Runs an MCP client starts use every connection of the tenant (the
 * agent reaches its Apps only from inside programs) and join the Islet session named by the MCP
 * session id.
 */

import { WorkspaceStore } from '@islet/kernel-sandbox';
import type { McpCaller, McpHost, McpRunState } from '@islet/mcp';
import type { DecisionRequest, StoredRun } from '@islet/runs';
import type { FastifyRequest } from 'fastify';
import type { Caller } from './auth.ts';
import { declareBindings } from './code-api.ts';
import { createDecisionsService } from './decisions-service.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';
import type { RunsService } from './runs-service.ts';
import { createSkillsService } from './skills-service.ts';

function summary(request: DecisionRequest): string {
  if (request.capability.action === 'sandbox.escalate')
    return `run with wider file access (${request.capability.target}): ${request.justification ?? ''}`;
  const args = request.app ? JSON.stringify(request.app.arguments) : '';
  return `call ${request.capability.target}${args ? ` with ${args.length > 500 ? `${args.slice(0, 500)}…` : args}` : ''}`;
}

export function createMcpHost(deps: GatewayDeps, runsService: RunsService, closing: AbortSignal) {
  const skills = createSkillsService(
    deps,
    new WorkspaceStore({ root: deps.config.ISLET_WORKSPACE_ROOT }),
    closing,
  );
  // The runs and decisions services read the tenant id and key id from their caller.
  const asCaller = (c: McpCaller) => ({ tenantId: c.tenantId, keyId: c.keyId ?? 'mcp' }) as Caller;
  const decisions = createDecisionsService(deps, runsService, {
    expireAfterMs: deps.config.ISLET_DECISION_EXPIRE_MS,
  });

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
    runs: {
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
        await runsService.own(asCaller(caller), runId);
        const run = await runsService.waitForEnd(runId, ms, signal);
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
      return declareBindings(await deps.connections.list(caller.tenantId), filter);
    },
    async skill(caller, request, sessionId) {
      const mode = 'workspace-write' as const;
      // The skills service reads the optional session from the request body; give it that shape.
      // and the caller (its tenant's in-flight quota counts skills too).
      const tenant = await deps.tenants.getTenant(caller.tenantId);
      const asRequest = {
        body: { sessionId },
        caller: { ...asCaller(caller), ...(tenant ? { tenant } : {}) },
      } as unknown as FastifyRequest;
      return skills.execute(request, { tenant: caller.tenantId, mode }, asRequest);
    },
  };
  return { host, close: () => skills.close() };
}
