/**
 * One job's slot on a runner (slot-gate.ts) and its tenant's fair-share lease, as the executor
 * sees them while the run parks and comes back (call-parking.ts): parked, the run holds neither
 * the slot nor the lease; resumed, it holds both again.
 *
 * A resume waits for the slot (local: slots bound the CPU work of programs) but not for the lease's
 * take-back: `RECLAIM` is unconditional (fair-share.ts: over the share if need be; the lease is the
 * pool's count of a tenant's busy slots, not a run's ownership, which is its job's lock and its
 * attempt), so its answer says nothing the run could act on, and a failed one was already only
 * logged (`onError`) while the run went on. Awaited, it put the park's release and the reclaim, two
 * fsync'd round trips, in series before the answer reached the program (test/bench/README.md, round
 * 44 `end-tail`; round 45 `resume-nowait`). Order is kept where it matters: lease changes stay one
 * chain (a reclaim never overtakes the release before it, a next park's release waits for the
 * reclaim), and whatever ends the lease after a resume (the run's end script, a hand-back's or a
 * wait's release) first calls `leaseEnding`: a reclaim already sent is awaited (landing after the end's
 * release it would leave a lease held, renewed by the heartbeat), one still queued behind the park's
 * release is never sent (the run is over; the end's release gives back a lease that was not taken
 * again, which only does what any release does: lease-release.lua), so a run whose answer came just
 * after it parked ends without either round trip on its way. Until then its tenant counts one
 * lease fewer for the run's last stretch, as after a reclaim that failed.
 */
import type { ExecutionSlot } from './call-parking.ts';
import type { ParkedRun, SlotGate } from './slot-gate.ts';

interface TenantLease {
  release(): Promise<void>;
  reclaim(): Promise<void>;
  /** Counts the lease as held again in this runner only (no Redis): the run's end script then gives it back. */
  hold(): void;
  /** A lease change failed: logged here when the slot was given no `onError` (run-processing.ts). */
  failed?(err: unknown): void;
}

export class RunSlot implements ExecutionSlot {
  private state: 'none' | 'active' | 'parked' = 'none';
  private handle: ParkedRun | undefined;
  /**
   * Lease changes in order: a reclaim never overtakes the release before it. Undefined until the
   * run first parks (most runs never do: no promise made for them).
   */
  private leaseOps: Promise<void> | undefined;
  /** Reclaims a resume queued that are not sent yet (behind a release still unanswered). */
  private reclaimsQueued = 0;
  /** The reclaim sent and not answered yet (settles, never rejects). */
  private reclaimInFlight: Promise<void> | undefined;
  /** `leaseEnding` was called: the run is over, no reclaim is sent any more. */
  private ending = false;
  /** Resumes that let the run go on before their reclaim answered (tests read it). */
  resumesUnawaited = 0;
  /** Reclaims never sent because the run ended first (tests read it). */
  reclaimsDropped = 0;
  private readonly gate: SlotGate;
  private readonly lease: TenantLease | undefined;
  private readonly onError: ((err: unknown) => void) | undefined;

  constructor(gate: SlotGate, lease: TenantLease | undefined, onError?: (err: unknown) => void) {
    this.gate = gate;
    this.lease = lease;
    this.onError = onError;
  }

  /** Takes a slot for the job (its fetch's reservation, else waits for one). */
  async take(token?: string): Promise<void> {
    await this.gate.take(token);
    this.state = 'active';
  }

  /** The fetch's reserved slot taken in the caller's turn (true); false: nothing taken, `take` waits. */
  takeReserved(token?: string): boolean {
    if (!this.gate.takeReserved(token)) return false;
    this.state = 'active';
    return true;
  }

  /** The job holds a slot now (not parked, not over). */
  get active(): boolean {
    return this.state === 'active';
  }

  park(release: () => void): boolean {
    if (this.state !== 'active') return false;
    const handle: ParkedRun = { release };
    if (!this.gate.park(handle)) return false;
    this.handle = handle;
    this.state = 'parked';
    this.leaseOp((l) => l.release());
    return true;
  }

  async resume(): Promise<void> {
    if (this.state !== 'parked' || !this.handle) return;
    await this.gate.resume(this.handle);
    this.handle = undefined;
    this.state = 'active';
    if (!this.lease) return;
    // Queued behind the park's release and not awaited: see the file's comment.
    this.reclaimsQueued++;
    this.resumesUnawaited++;
    void this.leaseOp((l) => this.reclaim(l));
  }

  /**
   * The run is over and its lease is about to be given back: reclaims not sent yet never will be
   * (the lease counted held here so the end's script carries its release), and the one sent, if
   * any, is what to await first. Undefined: nothing to wait for (a run that never parked).
   */
  leaseEnding(): Promise<void> | undefined {
    // Counted held once, at the first call: a second (the processor's, after the executor's end
    // gave the lease back) would put back an entry nothing deletes, renewed at every heartbeat.
    if (!this.ending) {
      this.ending = true;
      if (this.reclaimsQueued > 0) this.lease?.hold();
    }
    return this.reclaimInFlight;
  }

  /** The job is over: whatever it holds goes back. */
  end(): void {
    if (this.state === 'active') this.gate.release();
    else if (this.state === 'parked' && this.handle) this.gate.leave(this.handle);
    this.handle = undefined;
    this.state = 'none';
  }

  private reclaim(lease: TenantLease): Promise<void> {
    this.reclaimsQueued--;
    if (this.ending) {
      this.reclaimsDropped++;
      return Promise.resolve();
    }
    const sent = lease.reclaim();
    const settled: Promise<void> = sent.then(
      () => this.landed(settled),
      () => this.landed(settled),
    );
    this.reclaimInFlight = settled;
    return sent;
  }

  private landed(reclaim: Promise<void>): void {
    if (this.reclaimInFlight === reclaim) this.reclaimInFlight = undefined;
  }

  private leaseOp(op: (lease: TenantLease) => Promise<void>): Promise<void> {
    const lease = this.lease;
    if (!lease) return this.leaseOps ?? Promise.resolve();
    // The first change behind a settled promise made now, as the one every run made at its start.
    this.leaseOps = (this.leaseOps ?? Promise.resolve())
      .then(() => op(lease))
      .catch((err: unknown) => (this.onError ? this.onError(err) : lease.failed?.(err)));
    return this.leaseOps;
  }
}
