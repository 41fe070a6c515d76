/**
 * The per-pool metric series whose labels change (islet_operator_pool_stalled by reason,
 * islet_operator_max_replicas by mode), for the controller (controller.ts): each is remembered with
 * the labels it was last set with, so a change or a deleted pool removes the old series.
 */
import type { OperatorMetrics } from './metrics.ts';

export class PoolSeries {
  private readonly metrics: OperatorMetrics;
  /** The reason islet_operator_pool_stalled was last set with, per pool. */
  private readonly stalledReasons = new Map<string, string>();
  /** The mode islet_operator_max_replicas was last set with, per pool. */
  private readonly maxModes = new Map<string, string>();

  constructor(metrics: OperatorMetrics) {
    this.metrics = metrics;
  }

  setStalled(name: string, reason: string | undefined): void {
    const before = this.stalledReasons.get(name);
    if (before === reason) return;
    if (before !== undefined) this.metrics.poolStalled.remove({ pool: name, reason: before });
    if (reason === undefined) this.stalledReasons.delete(name);
    else {
      this.stalledReasons.set(name, reason);
      this.metrics.poolStalled.set({ pool: name, reason }, 1);
    }
  }

  setMaxReplicas(name: string, mode: string, max: number): void {
    const before = this.maxModes.get(name);
    if (before !== undefined && before !== mode)
      this.metrics.maxReplicas.remove({ pool: name, mode: before });
    this.maxModes.set(name, mode);
    this.metrics.maxReplicas.set({ pool: name, mode }, max);
  }

  /** The pool was deleted: its series go. */
  forget(name: string): void {
    this.setStalled(name, undefined);
    this.metrics.desiredReplicas.remove(name);
    const maxMode = this.maxModes.get(name);
    if (maxMode !== undefined) this.metrics.maxReplicas.remove({ pool: name, mode: maxMode });
    this.maxModes.delete(name);
  }
}
