/**
 * Leader election on a coordination.k8s.io/v1 Lease, the way client-go does it: the holder renews
 * `renewTime` every renew interval; a candidate takes the Lease over only when it has not seen the
 * record change for a whole lease duration (measured on its OWN clock, so clock skew between
 * nodes does not matter). Writes carry the resourceVersion read, so two candidates racing for an
 * expired Lease cannot both win: the second gets 409.
 *
 * A leader that cannot renew (API calls failing or hanging) stops acting once `renewDeadlineMs`
 * has passed since the START of its last successful renewal, on a timer of its own that no hung
 * call can hold up. The Lease was written no earlier than that start, and a successor waits a
 * whole lease duration after seeing it, so with renew deadline < lease duration (10 s < 15 s in
 * client-go) the old leader has stopped before anyone else can start. The API object given here
 * should time its calls out (operator.ts wraps it) so a renewal cannot hang past the deadline.
 */
import { type CoordinationV1Api, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { statusOf } from './kube.ts';

interface LeaderElectorOptions {
  api: Pick<CoordinationV1Api, 'readNamespacedLease' | 'createNamespacedLease' | 'replaceNamespacedLease'>;
  namespace: string;
  name: string;
  identity: string;
  /** How long a Lease stays valid without renewal, ms. Default 15 000. */
  leaseDurationMs?: number;
  /** A leader stops acting this long after its last successful renewal began, ms. Default 10 000. */
  renewDeadlineMs?: number;
  /** How often the leader renews and candidates retry, ms. Default 2 000. */
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  now?: () => number;
  onError?: (err: unknown) => void;
}

/** Reads and writes a release tries when renewals in flight keep moving the Lease (409). */
const RELEASE_ATTEMPTS = 3;

export class LeaderElector {
  private readonly o: Required<Omit<LeaderElectorOptions, 'onError'>> & Pick<LeaderElectorOptions, 'onError'>;
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private observedKey = '';
  private observedAtMs = 0;
  private lastRenewMs = 0;
  private deadlineTimer: NodeJS.Timeout | undefined;

  constructor(options: LeaderElectorOptions) {
    this.o = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      now: Date.now,
      ...options,
    };
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.tick();
  }

  /** Stops campaigning; a leader releases the Lease so a successor need not wait it out. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.leading) {
      // Stop acting first: releasing the Lease may itself hang until its timeout.
      this.setLeading(false);
      try {
        await this.release();
      } catch (err) {
        this.o.onError?.(err);
      }
    }
  }

  /**
   * Writes the Lease free if it is still ours. A renewal sent before `stop` may land between this
   * read and write (409: the resourceVersion moved): read again, or the Lease stays held until it
   * runs out and a successor waits a whole lease duration for nothing.
   */
  private async release(): Promise<void> {
    const { api, name, namespace, identity } = this.o;
    for (let attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
      const lease = await api.readNamespacedLease({ name, namespace });
      if (lease.spec?.holderIdentity !== identity) return;
      lease.spec = { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1 };
      try {
        await api.replaceNamespacedLease({ name, namespace, body: lease });
        return;
      } catch (err) {
        if (statusOf(err) !== 409) throw err;
      }
    }
  }

  private setLeading(v: boolean): void {
    if (!v && this.deadlineTimer) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
    }
    if (v === this.leading) return;
    this.leading = v;
    if (v) this.o.onStartedLeading();
    else this.o.onStoppedLeading();
  }

  private async tick(): Promise<void> {
    if (!this.running) return;
    const startedMs = this.o.now();
    try {
      const got = await this.tryAcquireOrRenew();
      // A renewal that answered after the deadline proves nothing about the present.
      const ok = got && this.o.now() - startedMs < this.o.renewDeadlineMs;
      if (!this.running) return;
      if (ok) {
        this.lastRenewMs = startedMs;
        this.setLeading(true);
        this.armDeadline();
      } else if (this.leading) this.setLeading(false); // someone else holds it
    } catch (err) {
      this.o.onError?.(err);
      // Could not reach the API server: the deadline timer steps down if this goes on.
    }
    if (this.running) this.timer = setTimeout(() => void this.tick(), this.o.retryPeriodMs);
  }

  private armDeadline(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const left = this.lastRenewMs + this.o.renewDeadlineMs - this.o.now();
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = undefined;
        if (this.leading) {
          this.o.onError?.(new Error(`lease not renewed within ${this.o.renewDeadlineMs} ms: stepping down`));
          this.setLeading(false);
        }
      },
      Math.max(0, left),
    );
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { api, name, namespace, identity } = this.o;
    const now = this.o.now();
    const leaseDurationSeconds = Math.max(1, Math.ceil(this.o.leaseDurationMs / 1000));
    let lease: V1Lease;
    try {
      lease = await api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      try {
        await api.createNamespacedLease({
          namespace,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds,
              acquireTime: new V1MicroTime(now),
              renewTime: new V1MicroTime(now),
              leaseTransitions: 0,
            },
          },
        });
        return true;
      } catch (e) {
        if (statusOf(e) === 409) return false;
        throw e;
      }
    }
    const spec = lease.spec ?? {};
    const key = `${spec.holderIdentity ?? ''}|${String(spec.renewTime?.valueOf() ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
    if (key !== this.observedKey) {
      this.observedKey = key;
      this.observedAtMs = now;
    }
    const heldByMe = spec.holderIdentity === identity;
    const durationMs = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    const expired = !spec.holderIdentity || this.observedAtMs + durationMs <= now;
    if (!heldByMe && !expired) return false;
    // Stopped while the read was out: a write now could take back a Lease `stop` has just freed.
    if (!this.running) return false;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: new V1MicroTime(now),
      acquireTime: heldByMe ? spec.acquireTime : new V1MicroTime(now),
      leaseTransitions: heldByMe ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    };
    try {
      await api.replaceNamespacedLease({ name, namespace, body: lease });
      return true;
    } catch (err) {
      if (statusOf(err) === 409) return false;
      throw err;
    }
  }
}
