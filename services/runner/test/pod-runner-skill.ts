/**
 * Stands in for services/runner/src/main.ts in a runner pod, where the runner is NOT root (uid
 * 10001) and skills therefore run as the runner's own uid: no per-run uid, no sweep by uid. Like
 * main.ts it hardens itself (non-dumpable, no_new_privs) and walls its secret directory off from
 * every sandbox (`protectPaths` → islet-jail --deny), then executes skill jobs through the runner's
 * skill path (createSkillExecutor → runSkill → islet-jail --supervise) and prints one JSON line per
 * job. It stays alive until stdin closes, so the test can look for leftovers while the "runner"
 * still runs. skill-nonroot.test.ts bundles it and starts it with setpriv as a non-root uid.
 * Usage: node pod-runner-skill.mjs <secret-dir> <workspace-root> <jobs-json>
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, createMetrics, createSealer } from '@islet/core';
import { closeFilesHelpers, hardenProcess, protectPaths, WorkspaceStore } from '@islet/kernel-sandbox';
import type { SandboxMode } from '@islet/protocol';
import { createSkillExecutor } from '../src/skill-executor.ts';

const [secretDir, workspaceRoot, jobsJson] = process.argv.slice(2);
if (!secretDir || !workspaceRoot || !jobsJson)
  throw new Error('usage: <secret-dir> <workspace-root> <jobs-json>');
const hardening = hardenProcess();
protectPaths([secretDir]);
// The runner itself reads its secrets (same uid as the skills): only the jail keeps skills out.
const token = readFileSync(join(secretDir, 'ISLET_INTERNAL_TOKEN'), 'utf8').trim();
const sealer = createSealer({ keys: { k1: randomBytes(32) }, activeKeyId: 'k1' });
const execute = createSkillExecutor({
  sealer,
  workspaces: new WorkspaceStore({ root: workspaceRoot }),
  metrics: createMetrics({ component: 'runner', defaults: false }),
  logger: createLogger({ name: 'pod-runner', level: 'silent' }),
});
const jobs = JSON.parse(jobsJson) as { mode: SandboxMode; code: string; timeout: number }[];
for (const [i, job] of jobs.entries()) {
  const sealed = await execute({
    id: `skill-${i}`,
    tenant: 't1',
    mode: job.mode,
    enqueuedAtMs: Date.now(),
    skill: {
      sealedRequest: sealer.seal(JSON.stringify({ language: 'bash', code: job.code, timeout: job.timeout })),
      sessionId: 's1',
    },
  });
  process.stdout.write(
    `${JSON.stringify({
      pid: process.pid,
      uid: process.getuid?.(),
      dumpable: hardening.dumpable,
      runnerReadsToken: token.length > 0,
      result: JSON.parse(sealer.open(sealed)),
    })}\n`,
  );
}
closeFilesHelpers();
process.stdout.write('done\n');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
