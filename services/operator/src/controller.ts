/**
 * The RunnerPool controller: watches pools and their Deployments, reconciles a pool whenever one
 * of them changes and every resync interval (queue depth has no watch), and executes the
 * reconciler's actions. One reconcile at a time: pools are few and this keeps writes ordered.
 */

import { randomBytes } from 'node:crypto';
import type { SandboxMode } from '@islet/protocol';
import { SANDBOX_MODES } from '@islet/protocol';
import type { Watch } from '@kubernetes/client-node';
import type { BackoffOptions } from './backoff.ts';
import type { PodDefaults } from './deployment.ts';
import type { DepthReader } from './depth.ts';
import { type KubeClient, statusOf } from './kube.ts';
import type { OperatorMetrics, ReconcileResult } from './metrics.ts';
import {
  DELETION_COST_ANNOTATION,
  DRAIN_COST,
  DRAINING_ANNOTATION,
  type PoolEvent,
  reconcile,
} from './reconciler.ts';
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

export interface ControllerDeps {
  kube: KubeClient;
  watch: Pick<Watch, 'watch'>;
  depth: DepthReader;
  metrics: OperatorMetrics;
  namespace: string;
  defaults: PodDefaults;
  /** Every pool is reconciled this often, ms (queue depth changes produce no event). */
  resyncIntervalMs: number;
  watchBackoff?: BackoffOptions;
  log: Logger;
  now?: () => number;
  /** This operator replica (Events' reportingInstance). */
  identity?: string;
}

/** A pool's mode as written (the spec is validated later, in the reconcile). */
const modeOf = (p: RunnerPool): string | undefined => (p.spec as { mode?: string } | undefined)?.mode;

export class PoolController {
  private readonly d: ControllerDeps;
  private readonly now: () => number;
  private readonly histories = new Map<string, Recommendation[]>();
  private readonly pending = new Set<string>();
  /** Last reconcile error per pool: an Event only when it changes, not on every retry. */
  private readonly lastErrors = new Map<string, string>();
  private readonly known = new Set<string>();
  /** Mode of every pool seen (watch + reconciles): pools of one mode split its queue's depth. */
  private readonly modes = new Map<string, string | undefined>();
  /** The mode islet_operator_max_replicas was last set with, per pool (to remove that series). */
  private readonly maxModes = new Map<string, string>();
  private running = false;
  private draining: Promise<void> = Promise.resolve();
  private busy = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private readonly watches: { start(): void; stop(): void }[];

  constructor(deps: ControllerDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
    const ns = deps.namespace;
    const selector = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
    this.watches = [
      new RestartableWatch({
        watch: deps.watch,
        path: `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
        list: () => deps.kube.listPools(ns),
        onSync: (items) => {
          this.known.clear();
          this.modes.clear();
          for (const p of items) {
            if (p.metadata?.name) this.modes.set(p.metadata.name, modeOf(p));
            this.enqueue(p.metadata?.name);
          }
        },
        onEvent: (type, obj) => {
          const name = obj.metadata?.name;
          if (type === 'DELETED' && name) {
            // The Deployment goes with it through its ownerReference (garbage collector).
            this.known.delete(name);
            this.modes.delete(name);
            this.histories.delete(name);
            this.lastErrors.delete(name);
            this.d.metrics.desiredReplicas.remove(name);
            const maxMode = this.maxModes.get(name);
            if (maxMode !== undefined) this.d.metrics.maxReplicas.remove({ pool: name, mode: maxMode });
            this.maxModes.delete(name);
            return;
          }
          if (name) this.modes.set(name, modeOf(obj as RunnerPool));
          this.enqueue(name);
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
        onEvent: (_type, obj) => this.enqueue(obj.metadata?.labels?.[POOL_LABEL]),
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
      for (const name of this.known) this.enqueue(name);
      this.resyncTimer = setTimeout(resync, this.d.resyncIntervalMs);
    };
    this.resyncTimer = setTimeout(resync, this.d.resyncIntervalMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.resyncTimer) clearTimeout(this.resyncTimer);
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
        this.modes.delete(name);
        return;
      }
      const mode = (pool.spec as { mode?: string } | undefined)?.mode;
      this.modes.set(name, mode);
      // Pools of the same mode share one queue: each scales for its share of the depth.
      const peers = [...this.modes.values()].filter((m) => m === mode).length;
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
      await this.execute(pool, out.actions, out.events);
      this.lastErrors.delete(name);
      if (out.desiredReplicas !== undefined) metrics.desiredReplicas.set({ pool: name }, out.desiredReplicas);
      const max = (pool.spec as { maxReplicas?: unknown } | undefined)?.maxReplicas;
      if (typeof max === 'number' && typeof mode === 'string') {
        const before = this.maxModes.get(name);
        if (before !== undefined && before !== mode) metrics.maxReplicas.remove({ pool: name, mode: before });
        this.maxModes.set(name, mode);
        metrics.maxReplicas.set({ pool: name, mode }, max);
      }
      if (out.scale) metrics.scaleEventsTotal.inc({ pool: name, direction: out.scale });
      if (out.scale) log.info({ pool: name, desired: out.desiredReplicas, direction: out.scale }, 'scaled');
    } catch (err) {
      // A 409 means someone wrote in between (the API server, another writer): reconcile again.
      result = statusOf(err) === 409 ? 'conflict' : 'error';
      log.warn({ pool: name, err: String(err), status: statusOf(err) }, 'reconcile failed');
      if (pool && result === 'error' && this.lastErrors.get(name) !== String(err)) {
        this.lastErrors.set(name, String(err));
        await this.emit(pool, { type: 'Warning', reason: 'ReconcileFailed', message: String(err) });
      }
      if (this.running) setTimeout(() => this.enqueue(name), result === 'conflict' ? 50 : 1000);
    } finally {
      metrics.reconcileTotal.inc({ result });
    }
  }

  /** Best effort: an Event that cannot be written must not fail the reconcile. */
  private async emit(pool: RunnerPool, e: PoolEvent): Promise<void> {
    if (!this.running) return;
    const now = new Date(this.now());
    const name = pool.metadata.name ?? '';
    try {
      await this.d.kube.createEvent(this.d.namespace, {
        metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace: this.d.namespace },
        involvedObject: {
          apiVersion: pool.apiVersion,
          kind: pool.kind,
          name,
          namespace: this.d.namespace,
          uid: pool.metadata.uid,
          resourceVersion: pool.metadata.resourceVersion,
        },
        type: e.type,
        reason: e.reason,
        message: e.message.slice(0, 1024),
        source: { component: MANAGED_BY },
        reportingComponent: MANAGED_BY,
        reportingInstance: this.d.identity ?? MANAGED_BY,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (err) {
      this.d.log.warn({ pool: name, reason: e.reason, err: String(err) }, 'event not recorded');
    }
  }

  /** Runs the actions in order; the Events go out once the Deployment/pod writes are done (before the status write, which may conflict and be retried without them). */
  private async execute(
    pool: RunnerPool,
    actions: ReturnType<typeof reconcile>['actions'],
    events: readonly PoolEvent[],
  ): Promise<void> {
    const { kube, namespace } = this.d;
    let emitted = false;
    const emitAll = async () => {
      if (emitted) return;
      emitted = true;
      for (const e of events) await this.emit(pool, e);
    };
    for (const a of actions) {
      if (a.type === 'update-status') await emitAll();
      // Stopped leading mid-reconcile (e.g. renew deadline passed): no further writes.
      if (!this.running) throw new Error('stopped leading: reconcile abandoned');
      switch (a.type) {
        case 'create-deployment':
          await kube.createDeployment(namespace, a.deployment);
          break;
        case 'apply-deployment':
          await kube.applyDeployment(namespace, a.deployment);
          break;
        case 'mark-draining':
          // Before replicas drop: the ReplicaSet deletes the lowest pod-deletion-cost first.
          for (const pod of a.pods) {
            await kube.patchPodAnnotations(namespace, pod, {
              [DELETION_COST_ANNOTATION]: DRAIN_COST,
              [DRAINING_ANNOTATION]: 'true',
            });
          }
          break;
        case 'unmark-draining':
          for (const pod of a.pods) {
            await kube
              .patchPodAnnotations(namespace, pod, {
                [DELETION_COST_ANNOTATION]: null,
                [DRAINING_ANNOTATION]: null,
              })
              .catch((err: unknown) => {
                if (statusOf(err) !== 404) throw err;
              });
          }
          break;
        case 'update-status':
          await kube.replacePoolStatus(pool, a.status);
          break;
      }
    }
    await emitAll();
  }
}
