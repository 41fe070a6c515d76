/**
 * The skill executor measures the session workspace after each skill (a skill writes it directly,
 * past the store's per-write checks): over its limits it says so, and the store then refuses writes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMetrics, createSealer, type Logger } from '@islet/core';
import { closeFilesHelpers, WorkspaceStore } from '@islet/kernel-sandbox';
import type { SkillResult } from '@islet/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { createSkillExecutor } from './skill-executor.ts';

const root = mkdtempSync(join(tmpdir(), 'islet-skill-exec-'));
afterAll(() => {
  closeFilesHelpers();
  rmSync(root, { recursive: true, force: true });
});

describe('skill executor workspace accounting', () => {
  it('counts what the skill wrote; over the limit, further writes are refused', async () => {
    const workspaces = new WorkspaceStore({ root, maxWorkspaceBytes: 1000, maxFiles: 10 });
    const sealer = createSealer({ keys: { k1: randomBytes(32) }, activeKeyId: 'k1' });
    const warnings: Array<Record<string, unknown>> = [];
    const logger = {
      debug: () => {},
      warn: (obj: Record<string, unknown>) => warnings.push(obj),
    } as unknown as Logger;
    const done: SkillResult = { success: true, output: '', error: '', exitCode: 0, language: 'bash' };
    const metrics = createMetrics({ component: 'runner', defaults: false });
    const execute = createSkillExecutor({
      sealer,
      workspaces,
      metrics,
      logger,
      // Stands in for the jailed interpreter: it writes straight into its working directory.
      run: async (req) => {
        writeFileSync(join(req.workspaceDir!, 'big.bin'), Buffer.alloc(1500));
        return done;
      },
    });
    await execute({
      id: 'skill-1',
      tenant: 't1',
      mode: 'workspace-write',
      enqueuedAtMs: Date.now(),
      skill: {
        sealedRequest: sealer.seal(JSON.stringify({ language: 'bash', code: 'true' })),
        sessionId: 's1',
      },
    });
    expect(warnings).toEqual([expect.objectContaining({ skill: 'skill-1', bytes: 1500, over: true })]);
    // Skills have their own series; run_code's counters and latency (the SLOs) stay untouched.
    const text = await metrics.registry.metrics();
    expect(text).toMatch(
      /^islet_skill_runs_total\{status="Completed",kind="[a-z-]+",mode="workspace-write"[^}]*\} 1$/m,
    );
    expect(text).toMatch(
      /^islet_skill_run_duration_seconds_count\{[^}]*mode="workspace-write",status="Completed"[^}]*\} 1$/m,
    );
    expect(text).not.toMatch(/^islet_runs_total\{/m);
    expect(text).not.toMatch(/^islet_run_duration_seconds_count\{/m);
    await expect(workspaces.workspace('t1', 's1').write('x.txt', Buffer.from('x'))).rejects.toMatchObject({
      code: 'workspace-full',
    });
  });
});
