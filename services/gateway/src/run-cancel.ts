/**
 * Cancelling a run (runs-service.ts `cancel`): moved out of runs-service.ts (a pure move), which
 * makes it once and hands it out as its `cancel`.
 */

import { isFinalStatus } from '@islet/protocol';
import type { StoredRun } from '@islet/runs';
import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';

export function createRunCancel(
  deps: GatewayDeps,
  own: (caller: Caller, id: string) => Promise<StoredRun>,
): (caller: Caller, id: string) => Promise<StoredRun> {
  const { runs, lifecycle } = deps;

  async function cancel(caller: Caller, id: string): Promise<StoredRun> {
    const run = await own(caller, id);
    if (isFinalStatus(run.status))
      throw new HttpProblem('run-finished', `code run ${id} already ended as ${run.status}`);
    await runs.requestCancel(id);
    const cancelled = async (message: string) => lifecycle.cancel(run, message);
    if (run.status === 'Waiting') {
      await cancelled('the run was cancelled while it waited');
    } else {
      // Still queued: take it off the queue and end it here. Active: the runner holding it aborts
      // it on the cancel message (and a runner that picks it up later sees cancelRequested).
      const { removed, state } = await deps.runQueue.removeQueued(run.mode, id);
      // A job still waiting in the queue was counted for the runners' fair share (a deferred one
      // was counted off when a runner took it): take the count back.
      if (removed && state !== 'delayed') await deps.poolDemand.unqueued(run.mode, run.tenant);
      if (removed) await cancelled('the run was cancelled before it started');
    }
    return (await runs.get(id)) ?? run;
  }

  return cancel;
}
