/**
 * "Nothing is lost": a gateway that dies between writing a run and queueing its job (a window of
 * one Redis round trip) would leave the run `Running` with no job. Every gateway runs this sweep;
 * a Redis lock lets one of them do it per interval. It re-queues runs that no runner ever started
 * (attempts 0), that are older than `graceMs` and whose first job does not exist. Re-queueing is
 * idempotent (jobId = run id), so a race with a slow submit cannot run a program twice.
 *
 * It also repairs the tenant's in-flight set, which is written apart from the run record (another
 * Cluster slot, see run-store.ts): an entry whose record is final (the end's second write was
 * lost) or that has no record and is older than `graceMs` (the create died between its two
 * writes, so the run was never acknowledged) is removed, giving the tenant its quota back.
 *
 * What to do with each entry is `reconcileRun`'s (the recovery matrix, `@islet/runs`); this walks
 * the in-flight index and applies its actions.
 */
import { type RunView, reconcileRun } from '@islet/runs';
import type { GatewayDeps } from './deps.ts';
import type { RunsService } from './runs-service.ts';

export interface OrphanSweeperOptions {
  /** How often, ms. Default 30000. */
  intervalMs?: number;
  /** A run younger than this is still being submitted, ms. Default 60000. */
  graceMs?: number;
}

export function createOrphanSweeper(
  deps: GatewayDeps,
  runsService: RunsService,
  options: OrphanSweeperOptions = {},
) {
  const intervalMs = options.intervalMs ?? 30_000;
  const graceMs = options.graceMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;

  const policy = { graceMs, resumeRepairAfterMs: 0 };

  async function sweepOnce(): Promise<string[]> {
    const requeued: string[] = [];
    if (!(await deps.inFlight.takeSweepLock(Math.max(1000, intervalMs - 500)))) return requeued;
    for await (const { tenant, id, sinceMs } of deps.inFlight.entries()) {
      const record = await deps.inFlight.head(id);
      const view: RunView = { record, job: { state: 'unknown' }, inFlightSinceMs: sinceMs };
      let actions = reconcileRun(view, Date.now(), policy);
      if (actions.some((a) => a.type === 'check-job')) {
        const mode = record?.mode;
        if (!mode || !(mode in deps.queues)) continue;
        const job = (await deps.queues[mode].getJob(id)) ? 'present' : 'missing';
        actions = reconcileRun({ ...view, job: { state: job } }, Date.now(), policy);
      }
      for (const action of actions) {
        if (action.type === 'drop-in-flight') {
          await deps.inFlight.drop(tenant, id);
          deps.logger.warn(
            { runId: id, tenant, status: record?.status },
            'in-flight entry of a run that is not in flight; removed',
          );
        } else if (action.type === 'enqueue') {
          const run = await deps.runs.get(id);
          if (!run) continue;
          await runsService.enqueue(run);
          requeued.push(id);
          deps.logger.warn({ runId: id }, 'run had no job; queued it again');
        }
      }
    }
    return requeued;
  }

  return {
    sweepOnce,
    start() {
      timer = setInterval(() => {
        sweepOnce().catch((err) => deps.logger.warn({ err: (err as Error).message }, 'orphan sweep failed'));
      }, intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
