/**
 * The RunnerPool controller: watches pools and their Deployments, reconciles a pool whenever one
 * of them changes and every resync interval (queue depth has no watch), and executes the
 * reconciler's actions (pool-actions.ts). One reconcile at a time: pools are few and this keeps
 * writes ordered. A failing pool's retries are in pool-retries.ts, its labelled metric series in
 * pool-series.ts.
 */

import type { SandboxMode } from '@islet/protocol';
import { SANDBOX_MODES } from '@islet/protocol';
import type { Watch } from '@kubernetes/client-node';
import type { BackoffOptions } from './backoff.ts';
import type { PodDefaults } from './deployment.ts';
import type { DepthReader } from './depth.ts';
import { EventRecorder } from './event-recorder.ts';
import { apiFailureOf, type KubeClient, refusedByApi, statusOf } from './kube.ts';
import { migrateManagedFields } from './managed-fields.ts';
import type { OperatorMetrics, ReconcileResult } from './metrics.ts';
import { type ActionTarget, executeActions } from './pool-actions.ts';
import { PoolRetries } from './pool-retries.ts';
import { PoolSeries } from './pool-series.ts';
import { ownedBy, type PoolEvent, reconcile, stalledOnItsOwn, writeFailedStatus } from './reconciler.ts';
import {
  deploymentNameFor,
  GROUP,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PLURAL,
  POOL_LABEL,
  type RunnerPool,
  VERSION,
} from './runner-pool.ts';
import { type Recommendation, shareOf } from './scaling.ts';
import { RestartableWatch } from './watch.ts';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

interface ControllerDeps {
  kube: KubeClient;
  watch: Pick<Watch, 'watch'>;
  depth: DepthReader;
  metrics: OperatorMetrics;
  namespace: string;
  defaults: PodDefaults;
  /** Every pool is reconciled this often, ms (queue depth changes produce no event). */
  resyncIntervalMs: number;
  watchBackoff?: BackoffOptions;
  /** Per-pool retry delay after a failed reconcile: doubles per failure, reset by a success. */
  retryBackoff?: BackoffOptions;
  log: Logger;
  now?: () => number;
  /** This operator replica (Events' reportingInstance). */
  identity?: string;
}

/** A pool's mode as written (the spec is validated later, in the reconcile). */
const modeOf = (p: RunnerPool): string | undefined => (p.spec as { mode?: string } | undefined)?.mode;

/** What the demand split needs of every pool seen: its mode and whether it can serve its share. */
interface Peer {
  mode: string | undefined;
  stalled: boolean;
}

/** The Stalled reason of each reconcile result (undefined: not Stalled). */
const STALLED_REASON: Record<string, string | undefined> = {
  'invalid-spec': 'InvalidSpec',
  'not-owned': 'DeploymentNotOwned',
  'depth-unavailable': 'QueueDepthUnavailable',
};

export class PoolController {
  private readonly d: ControllerDeps;
  private readonly now: () => number;
  private readonly histories = new Map<string, Recommendation[]>();
  private readonly pending = new Set<string>();
  /** Pools failing to reconcile: retried after an exponential delay, not on every event or resync. */
  private readonly retries: PoolRetries;
  private readonly known = new Set<string>();
  /** Every pool seen (watch + reconciles): pools of one mode that can serve split its queue's depth. */
  private readonly peers = new Map<string, Peer>();
  private readonly events: EventRecorder;
  private readonly series: PoolSeries;
  private running = false;
  private draining: Promise<void> = Promise.resolve();
  private busy = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private readonly watches: { start(): void; stop(): void }[];
  /** Where a reconcile's actions are written (pool-actions.ts). */
  private readonly target: ActionTarget;

  constructor(deps: ControllerDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
    this.retries = new PoolRetries(deps.retryBackoff);
    this.series = new PoolSeries(deps.metrics);
    this.target = {
      kube: deps.kube,
      namespace: deps.namespace,
      running: () => this.running,
      emit: (pool, e) => this.emit(pool, e),
    };
    this.events = new EventRecorder({
      kube: deps.kube,
      namespace: deps.namespace,
      identity: deps.identity ?? MANAGED_BY,
      now: this.now,
      warn: (obj, msg) => deps.log.warn(obj, msg),
    });
    const ns = deps.namespace;
    const selector = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
    this.watches = [
      new RestartableWatch({
        watch: deps.watch,
        path: `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
        list: () => deps.kube.listPools(ns),
        onSync: (items) => {
          this.known.clear();
          this.peers.clear();
          for (const p of items) {
            this.see(p);
            this.enqueueChanged(p);
          }
        },
        onEvent: (type, obj) => {
          const name = obj.metadata?.name;
          if (type === 'DELETED' && name) {
            // The Deployment goes with it through its ownerReference (garbage collector).
            this.known.delete(name);
            this.peers.delete(name);
            this.histories.delete(name);
            this.retries.clear(name);
            this.series.forget(name);
            this.events.forget(obj.metadata?.uid);
            return;
          }
          this.see(obj as RunnerPool);
          this.enqueueChanged(obj as RunnerPool);
        },
        onRestart: (reason, err) => this.onWatchRestart('runnerpools', reason, err),
        backoff: deps.watchBackoff,
      }),
      new RestartableWatch({
        watch: deps.watch,
        path: `/apis/apps/v1/namespaces/${ns}/deployments`,
        labelSelector: selector,
        list: () => deps.kube.listDeployments(ns, selector),
        onSync: () => {},
        onEvent: (_type, obj) => this.enqueueUnlessBackingOff(obj.metadata?.labels?.[POOL_LABEL]),
        onRestart: (reason, err) => this.onWatchRestart('deployments', reason, err),
        backoff: deps.watchBackoff,
      }),
    ];
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (const w of this.watches) w.start();
    const resync = () => {
      for (const name of this.known) this.enqueueUnlessBackingOff(name);
      this.resyncTimer = setTimeout(resync, this.d.resyncIntervalMs);
    };
    this.resyncTimer = setTimeout(resync, this.d.resyncIntervalMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.resyncTimer) clearTimeout(this.resyncTimer);
    this.retries.stopTimers();
    for (const w of this.watches) w.stop();
    this.pending.clear();
    await this.draining;
  }

  /** Resolves when every queued reconcile has run (tests use it to step the controller). */
  idle(): Promise<void> {
    return this.draining;
  }

  private onWatchRestart(resource: string, reason: string, err: unknown): void {
    this.d.metrics.watchRestartsTotal.inc({ resource, reason });
    this.d.log.warn({ resource, reason, err: err ? String(err) : undefined }, 'watch restarting');
  }

  /** The retry state of a pool that is failing (tests read it), else undefined. */
  retryState(name: string): { failures: number; delayMs: number } | undefined {
    return this.retries.state(name);
  }

  private see(p: RunnerPool): void {
    const name = p.metadata?.name;
    if (name) this.peers.set(name, { mode: modeOf(p), stalled: stalledOnItsOwn(p) });
  }

  /** A pool event: a new generation (someone changed the spec) retries at once, anything else waits out the backoff. */
  private enqueueChanged(p: RunnerPool): void {
    const name = p.metadata?.name;
    if (!name) return;
    if (this.retries.changedSince(name, p.metadata.generation)) this.retries.clear(name);
    this.enqueueUnlessBackingOff(name);
  }

  private enqueueUnlessBackingOff(name: string | undefined): void {
    if (name && this.retries.has(name)) {
      this.known.add(name);
      return;
    }
    this.enqueue(name);
  }

  enqueue(name: string | undefined): void {
    if (!name || !this.running) return;
    this.known.add(name);
    this.pending.add(name);
    if (!this.busy) this.draining = this.drain();
  }

  private async drain(): Promise<void> {
    this.busy = true;
    try {
      while (this.running && this.pending.size) {
        const name = this.pending.values().next().value as string;
        this.pending.delete(name);
        await this.reconcileOne(name);
      }
    } finally {
      this.busy = false;
    }
  }

  private async reconcileOne(name: string): Promise<void> {
    const { kube, namespace, metrics, log } = this.d;
    let result: ReconcileResult = 'ok';
    let pool: RunnerPool | undefined;
    try {
      pool = await kube.getPool(namespace, name);
      if (!pool) {
        this.known.delete(name);
        this.peers.delete(name);
        this.retries.clear(name);
        return;
      }
      pool = await this.withDefaultReplicas(pool);
      const mode = modeOf(pool);
      this.see(pool);
      // Pools of the same mode share one queue: each scales for its share of the depth, shared only
      // among the pools that can serve (a Stalled one gets no runners, so its share would wait).
      const peers =
        1 + [...this.peers].filter(([n, p]) => n !== name && p.mode === mode && !p.stalled).length;
      const [deployment, pods, reading] = await Promise.all([
        kube.getDeployment(namespace, deploymentNameFor(name)),
        kube.listPods(namespace, `${POOL_LABEL}=${name}`),
        SANDBOX_MODES.includes(mode as SandboxMode)
          ? this.d.depth
              .read(mode as SandboxMode)
              .catch((err: unknown) => ({ error: `redis: ${String(err)}` }))
          : Promise.resolve({ error: 'no valid mode' }),
      ]);
      const out = reconcile({
        pool,
        deployment,
        pods,
        depth: 'error' in reading ? reading : shareOf(reading.depth, peers),
        activeByPod: 'error' in reading ? new Map() : reading.activeByPod,
        nowMs: this.now(),
        history: this.histories.get(name),
        defaults: this.d.defaults,
      });
      this.histories.set(name, out.history);
      result = out.result;
      if (deployment && ownedBy(deployment, pool)) await this.migrateFieldOwnership(deployment);
      // Counted once the Deployment write lands: a later step that fails (a status write timing
      // out) must not lose it, since the retry finds the replicas already changed.
      await executeActions(this.target, pool, out.actions, out.events, () => {
        if (out.scale) metrics.scaleEventsTotal.inc({ pool: name, direction: out.scale });
      });
      this.retries.clear(name);
      const peer = this.peers.get(name);
      if (peer) peer.stalled = out.result === 'invalid-spec' || out.result === 'not-owned';
      this.series.setStalled(name, STALLED_REASON[out.result]);
      if (out.desiredReplicas !== undefined) metrics.desiredReplicas.set({ pool: name }, out.desiredReplicas);
      const max = (pool.spec as { maxReplicas?: unknown } | undefined)?.maxReplicas;
      if (typeof max === 'number' && typeof mode === 'string') this.series.setMaxReplicas(name, mode, max);
      if (out.scale) log.info({ pool: name, desired: out.desiredReplicas, direction: out.scale }, 'scaled');
    } catch (err) {
      // A 409 means someone wrote in between (the API server, another writer): reconcile again.
      result = statusOf(err) === 409 ? 'conflict' : 'error';
      const failure = apiFailureOf(err);
      log.warn(
        { pool: name, reason: failure.reason, message: failure.message, status: statusOf(err) },
        'reconcile failed',
      );
      if (result === 'conflict') {
        if (this.running) setTimeout(() => this.enqueue(name), 50);
      } else {
        if (pool) await this.recordFailure(pool, failure, refusedByApi(err));
        if (this.running) this.retries.schedule(name, pool?.metadata.generation, () => this.enqueue(name));
      }
    } finally {
      metrics.reconcileTotal.inc({ result });
    }
  }

  /**
   * The CRD defaults spec.replicas to 0, but only for objects written after a CRD with that default
   * was installed (helm never upgrades CRDs) and only where the API server applies CRD defaults; a
   * pool without it has a /scale subresource that answers 500, which HPA and KEDA read first. Best
   * effort: a pool that moved meanwhile (or a refused patch) is reconciled as it is, and the write
   * this makes triggers the next reconcile anyway.
   */
  private async withDefaultReplicas(pool: RunnerPool): Promise<RunnerPool> {
    const spec = pool.spec as { replicas?: unknown } | undefined;
    if (!spec || typeof spec !== 'object' || spec.replicas !== undefined) return pool;
    try {
      return await this.d.kube.defaultPoolReplicas(
        this.d.namespace,
        pool.metadata.name ?? '',
        pool.metadata.resourceVersion ?? '',
      );
    } catch (err) {
      this.d.log.warn(
        { pool: pool.metadata.name, status: statusOf(err), ...apiFailureOf(err) },
        'could not default spec.replicas (the pool’s /scale stays unreadable until it is set)',
      );
      return pool;
    }
  }

  /** Best effort: an Event that cannot be written must not fail the reconcile. */
  private async emit(pool: RunnerPool, e: PoolEvent): Promise<void> {
    if (!this.running) return;
    await this.events.record(pool, e);
  }

  /**
   * A failed reconcile: one aggregated ReconcileFailed Event (the API's reason and message, never
   * the response headers, so a retry repeats the same Event) and, when the API server refused the
   * write (the pool can no longer be served), Ready=False / Stalled=True with that reason, so nobody
   * reads a stuck pool as Ready. A transient failure (timeout, 5xx, 429) only retries: a slow API
   * server must not flip pools to Stalled or take them out of their mode's demand split.
   */
  private async recordFailure(
    pool: RunnerPool,
    failure: { reason: string; message: string },
    refused: boolean,
  ): Promise<void> {
    const name = pool.metadata.name ?? '';
    if (refused) {
      const peer = this.peers.get(name);
      if (peer) peer.stalled = true;
      this.series.setStalled(name, failure.reason);
    }
    await this.emit(pool, {
      type: 'Warning',
      reason: 'ReconcileFailed',
      message: `${failure.reason}: ${failure.message}`,
    });
    if (!this.running || !refused) return;
    const status = writeFailedStatus(pool, failure.reason, failure.message, this.now());
    if (!status) return;
    try {
      await this.d.kube.replacePoolStatus(pool, status);
    } catch (err) {
      this.d.log.warn({ pool: name, err: apiFailureOf(err).message }, 'failure status not written');
    }
  }

  /** Moves a pre-apply Update entry of the operator's fields into its Apply entry, once per Deployment. */
  private async migrateFieldOwnership(deployment: NonNullable<Parameters<typeof ownedBy>[0]>): Promise<void> {
    const migrated = migrateManagedFields(deployment.metadata?.managedFields);
    if (!migrated || !this.running) return;
    const name = deployment.metadata?.name ?? '';
    await this.d.kube.replaceManagedFields(
      this.d.namespace,
      name,
      deployment.metadata?.resourceVersion ?? '',
      migrated,
    );
    this.d.log.info({ deployment: name }, 'field ownership migrated to server-side apply');
  }
}
