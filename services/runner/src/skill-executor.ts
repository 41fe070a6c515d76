/**
 * Executes one run_code skill job (BullMQ job name `skill` on the mode's queue): opens the sealed
 * request, runs it with `runSkill` under the mode's kernel profile (working directory: the
 * session's workspace when the request named one, else a scratch dir), counts it in the same run
 * metrics as code runs, and returns the sealed result as the job's return value (the gateway that
 * queued it waits for the job and opens it).
 */

import type { Logger, Metrics, Sealer } from '@islet/core';
import {
  JAIL_UNAVAILABLE_EXIT_CODE,
  runSkill,
  SKILL_TIMEOUT_EXIT_CODE,
  type WorkspaceStore,
} from '@islet/kernel-sandbox';
import type { SandboxMode, SkillRequest, SkillResult } from '@islet/protocol';
import type { SkillJobPayload } from '@islet/runs';

interface SkillExecutorDeps {
  sealer: Sealer;
  workspaces: WorkspaceStore;
  metrics: Metrics;
  logger: Logger;
  /** Test hook: the skill runner (default `runSkill`). */
  run?: typeof runSkill;
}

interface SkillJob {
  id: string;
  tenant: string;
  mode: SandboxMode;
  enqueuedAtMs: number;
  skill: SkillJobPayload;
}

/** run_code failure kind of a skill result, for `islet_runs_total{kind}`. */
function skillFailureKind(result: SkillResult): string {
  if (result.success) return 'none';
  if (result.exitCode === SKILL_TIMEOUT_EXIT_CODE) return 'timeout';
  if (result.exitCode === JAIL_UNAVAILABLE_EXIT_CODE) return 'sandbox-unavailable';
  return 'exception';
}

export function createSkillExecutor(deps: SkillExecutorDeps) {
  const run = deps.run ?? runSkill;

  /**
   * A skill writes its workspace directly (under islet-jail), past the store's per-write checks; so
   * after each skill the workspace is measured. Over its limits, every further write through the
   * files API or binding is refused until files are removed (the store's write checks the total).
   */
  async function accountWorkspace(job: SkillJob, sessionId: string): Promise<void> {
    try {
      const usage = await deps.workspaces.usage(job.tenant, sessionId);
      if (usage.over)
        deps.logger.warn(
          { skill: job.id, tenant: job.tenant, ...usage },
          'workspace over its limits after a skill; further writes are refused',
        );
    } catch (err) {
      deps.logger.warn({ skill: job.id, err: (err as Error).message }, 'workspace accounting failed');
    }
  }

  return async function executeSkill(job: SkillJob): Promise<string> {
    const { metrics } = deps;
    metrics.queueWait.observe({ mode: job.mode }, Math.max(0, Date.now() - job.enqueuedAtMs) / 1000);
    const request = JSON.parse(deps.sealer.open(job.skill.sealedRequest)) as SkillRequest;
    const started = performance.now();
    // Always under islet-jail (runSkill applies the mode's profile itself, whatever
    // ISLET_SANDBOX_JAIL says about the engine's hosts); a missing launcher fails the skill.
    const workspaceDir = job.skill.sessionId
      ? await deps.workspaces.ensure(job.tenant, job.skill.sessionId)
      : undefined;
    const result = await run({
      ...request,
      mode: job.mode,
      workspaceRoot: deps.workspaces.root,
      ...(workspaceDir ? { workspaceDir } : {}),
    });
    if (job.skill.sessionId) await accountWorkspace(job, job.skill.sessionId);
    const kind = skillFailureKind(result);
    // Skills have their own series: a slow shell command must not burn the run_code SLOs.
    const status = result.success ? 'Completed' : 'Failed';
    metrics.skillDuration.observe({ mode: job.mode, status }, (performance.now() - started) / 1000);
    metrics.skillRunsTotal.inc({ status, kind, mode: job.mode });
    deps.logger.debug({ skill: job.id, mode: job.mode, exitCode: result.exitCode, kind }, 'skill done');
    return deps.sealer.seal(JSON.stringify(result));
  };
}

export type SkillExecutor = ReturnType<typeof createSkillExecutor>;
