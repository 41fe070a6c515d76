/**
 * The wall between principals of one tenant, in one place. A session belongs to the principal that
 * opened it (its first run, file or skill claims it); a run to the principal that submitted it.
 * Every route that takes a run or a session id asks here: the owner, or a key with
 * `sessions.admin` (the tenant's auditor), passes; anyone else gets the 404 a missing run or
 * session gets (walls do not tell what is behind them). Approvers are the one exception by design:
 * a decision is answered by another principal (`decisions` scope, four-eyes), so the decisions
 * service asks only for the tenant (`runInTenant`).
 */
import { principalOf } from '@islet/core';
import type { StoredRun } from '@islet/runs';
import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';

const isSessionsAdmin = (caller: Caller) => caller.scopes.includes('sessions.admin');

/** Whether the caller may see and act on the run: its submitter's, or any with `sessions.admin`. */
export function mayActOn(caller: Caller, run: StoredRun): boolean {
  return isSessionsAdmin(caller) || run.principal === undefined || run.principal === principalOf(caller);
}

const noRun = (id: string) => new HttpProblem('not-found', `no code run ${id}`);
const noSession = (id: string) => new HttpProblem('not-found', `no session ${id}`);

export function createOwnership(deps: Pick<GatewayDeps, 'runs' | 'sessions' | 'config'>) {
  async function runInTenant(caller: Caller, id: string): Promise<StoredRun> {
    const run = await deps.runs.get(id);
    if (!run || run.tenant !== caller.tenantId) throw noRun(id);
    return run;
  }
  return {
    runInTenant,
    /** The run if the caller may act on it; 404 otherwise. */
    async run(caller: Caller, id: string): Promise<StoredRun> {
      const run = await runInTenant(caller, id);
      if (!mayActOn(caller, run)) throw noRun(id);
      return run;
    },
    /**
     * Claims the session for the caller's principal when nobody owns it (as a run's admission does),
     * and refuses (404) one another principal owns, unless the caller has `sessions.admin`.
     */
    async claimSession(caller: Caller, session: string): Promise<void> {
      const principal = principalOf(caller);
      if (isSessionsAdmin(caller)) return;
      const owner = await deps.sessions.claim(
        caller.tenantId,
        session,
        principal,
        deps.config.ISLET_RUN_RETENTION_SECONDS,
      );
      if (owner !== principal) throw noSession(session);
    },
    /** Whether the session is the caller's to read: its own, nobody's yet, or any with `sessions.admin`. */
    async mayReadSession(caller: Caller, session: string): Promise<boolean> {
      if (isSessionsAdmin(caller)) return true;
      const owner = await deps.sessions.owner(caller.tenantId, session);
      return owner === null || owner === principalOf(caller);
    },
  };
}
