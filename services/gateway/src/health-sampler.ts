/**
 * Samples the gauges of the health series (`GET /v1/health`) once per bucket: per mode the queue
 * depth (waiting, prioritized and delayed jobs), runner slots busy (the fair share's leases; active
 * jobs with the share off) and live (the runners' registrations), decisions pending; per tenant its runs in flight, the slots they hold
 * and its pending decisions. Every gateway runs it; a per-bucket Redis lock lets one of them
 * sample each bucket. Counters (runs ended, failures, latency) need no sampling: each run's end
 * writes them (@islet/runs health-store.ts).
 */
import { SANDBOX_MODES } from '@islet/protocol';
import { fairShareOn, HEALTH_BUCKET_MS, healthBucket } from '@islet/runs';
import type { GatewayDeps } from './deps.ts';

export function createHealthSampler(
  deps: Pick<GatewayDeps, 'config' | 'health' | 'runQueue' | 'decisions' | 'tenants' | 'logger'>,
  options: { intervalMs?: number } = {},
) {
  const intervalMs = options.intervalMs ?? HEALTH_BUCKET_MS;
  let timer: NodeJS.Timeout | undefined;

  /** Samples this bucket unless another gateway does; true when this one did. */
  async function sampleOnce(now = Date.now()): Promise<boolean> {
    if (!(await deps.health.lead(healthBucket(now)))) return false;
    // Busy slots from the leases when the runners take them: BullMQ's active jobs also count the
    // runs parked outside the slots while a binding call waits.
    const leased = fairShareOn(deps.config);
    const [counts, slots, decisions, leases] = await Promise.all([
      deps.runQueue.depths(),
      deps.health.poolSlots(SANDBOX_MODES, now),
      deps.decisions.countAllPending(),
      leased ? deps.health.leasedSlots(SANDBOX_MODES, now) : undefined,
    ]);
    const cluster: Record<string, number> = { decisions };
    SANDBOX_MODES.forEach((mode, i) => {
      const c = counts[i] ?? {};
      cluster[`queue:${mode}`] = (c.waiting ?? 0) + (c.prioritized ?? 0) + (c.delayed ?? 0);
      cluster[`busy:${mode}`] = leases ? (leases[mode] ?? 0) : (c.active ?? 0);
      cluster[`slots:${mode}`] = slots[mode] ?? 0;
    });
    await deps.health.recordGauges(null, now, cluster);
    for (const { id } of await deps.tenants.listTenants()) {
      const [held, pending] = await Promise.all([
        deps.health.tenantGauges(id, SANDBOX_MODES, now),
        deps.decisions.countPending(id),
      ]);
      // An idle tenant writes nothing: a bucket the cluster sampled reads its missing gauges as 0.
      if (held.inFlight === 0 && pending === 0) continue;
      const gauges: Record<string, number> = { inflight: held.inFlight, decisions: pending };
      for (const [mode, n] of Object.entries(held.busy)) gauges[`busy:${mode}`] = n;
      await deps.health.recordGauges(id, now, gauges);
    }
    return true;
  }

  return {
    sampleOnce,
    start() {
      const tick = () => {
        sampleOnce().catch((err: unknown) => deps.logger.warn({ err }, 'health sample failed'));
        timer = setTimeout(tick, intervalMs);
        timer.unref();
      };
      tick();
    },
    stop() {
      clearTimeout(timer);
    },
  };
}
