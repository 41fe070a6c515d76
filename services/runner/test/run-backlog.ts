/**
 * What the runner's backlog tests (completion-start, handed-next, lone-chain, lease-commands,
 * queue-commands, fetch-defer, end-start-terms) share: a hold for the harness's executor, a
 * backlog added in one write as the gateway counts it, the runner's deferral counter and Redis's
 * own command counts.
 */
import { noteQueued, runJobOptions } from '@islet/runs';
import type { Redis } from 'ioredis';
import { mode, type RunnerHarness, type RunnerUnderTest } from './runner-harness.ts';

/**
 * A hold the harness's executor awaits (a thenable, awaited afresh by each run): open at first (the
 * warm-up passes), `close()` holds the runs that reach it, `open()` lets them all through.
 */
export function gate() {
  let closed = false;
  const waiting: (() => void)[] = [];
  const held = {
    // biome-ignore lint/suspicious/noThenProperty: awaited by the executor, once per run.
    then(resolve: () => void) {
      if (closed) waiting.push(resolve);
      else resolve();
    },
  } as unknown as Promise<void>;
  return {
    held,
    /** Runs held now. */
    waiting: () => waiting.length,
    close: () => {
      closed = true;
    },
    open: () => {
      closed = false;
      for (const w of waiting.splice(0)) w();
    },
  };
}

/**
 * Adds `ids` (their runs stored by `h`) in one write (a backlog behind the first), each counted
 * queued as the gateway does (the fair share's demand).
 */
export async function backlog(
  h: RunnerHarness,
  redis: Redis,
  t: RunnerUnderTest,
  ids: string[],
  tenant = 'acme',
) {
  for (const id of ids) await h.newRun(id, tenant);
  for (const _ of ids) await noteQueued(redis, t.config, mode, tenant);
  await t.queue.addBulk(
    ids.map((id) => ({
      name: 'run',
      data: { runId: id, tenant, enqueuedAtMs: Date.now() },
      opts: runJobOptions(id, 2),
    })),
  );
}

/** The runner's islet_tenant_share_deferrals_total, every tenant's summed. */
export async function deferrals(t: RunnerUnderTest): Promise<number> {
  const text = await t.metrics.registry.getSingleMetricAsString('islet_tenant_share_deferrals_total');
  let n = 0;
  for (const m of text.matchAll(/^islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

/** Commands Redis executed so far, by name (a script's own commands counted, as Redis counts them). */
export async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const text = await redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) out.set(m[1] as string, Number(m[2]));
  return out;
}
