/**
 * One job's slot on a runner (slot-gate.ts) and its tenant's fair-share lease, as the executor
 * sees them while the run parks and comes back (call-parking.ts): parked, the run holds neither
 * the slot nor the lease; resumed, it holds both again.
 *
 * A resume waits for the slot (local: slots bound the CPU work of programs) but not for the lease's
 * take-back to answer: `RECLAIM` is unconditional (fair-share.ts: over the share if need be; the
 * lease is the pool's count of a tenant's busy slots, not a run's ownership, which is its job's
 * lock and its attempt), so its answer says nothing the run could act on, and a failed one was
 * already only logged (`onError`) while the run went on. Awaited, it put a fsync'd round trip (two
 * under load, chained behind the park's release) in series before the answer reached the program
 * (test/bench/README.md, round 44 `end-tail`; round 45 `resume-nowait`). Order is kept instead where
 * it matters: lease changes stay one chain (a reclaim never overtakes the release before it, a next
 * park's release waits for the reclaim), and whatever ends the lease after a resume (the run's end
 * script, a hand-back's or a wait's release) first waits for the chain (`leaseSettled`); otherwise a
 * reclaim landing after the end's release would leave a lease held, renewed by the heartbeat.
 */
import type { ExecutionSlot } from './call-parking.ts';
import type { ParkedRun, SlotGate } from './slot-gate.ts';

interface TenantLease {
  release(): Promise<void>;
  reclaim(): Promise<void>;
}

export class RunSlot implements ExecutionSlot {
  private state: 'none' | 'active' | 'parked' = 'none';
  private handle: ParkedRun | undefined;
  /** Lease changes in order: a reclaim never overtakes the release before it. */
  private leaseOps: Promise<void> = Promise.resolve();
  /** Lease changes sent or queued whose answer has not come (`leaseSettled` waits only then). */
  private leasePending = 0;
  /** Resumes that let the run go on before their reclaim answered (tests read it). */
  resumesUnawaited = 0;
  private readonly gate: SlotGate;
  private readonly lease: TenantLease | undefined;
  private readonly onError: (err: unknown) => void;

  constructor(gate: SlotGate, lease: TenantLease | undefined, onError: (err: unknown) => void) {
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
    // Queued behind the park's release, not awaited: see the file's comment.
    void this.leaseOp((l) => l.reclaim());
    this.resumesUnawaited++;
  }

  /**
   * Resolves once every lease change made so far answered (or failed, logged); undefined when none
   * is pending, so a run that never parked awaits nothing. Awaited before the run's lease ends.
   */
  leaseSettled(): Promise<void> | undefined {
    return this.leasePending > 0 ? this.leaseOps : undefined;
  }

  /** The job is over: whatever it holds goes back. */
  end(): void {
    if (this.state === 'active') this.gate.release();
    else if (this.state === 'parked' && this.handle) this.gate.leave(this.handle);
    this.handle = undefined;
    this.state = 'none';
  }

  private leaseOp(op: (lease: TenantLease) => Promise<void>): Promise<void> {
    const lease = this.lease;
    if (!lease) return this.leaseOps;
    this.leasePending++;
    this.leaseOps = this.leaseOps
      .then(() => op(lease))
      .catch(this.onError)
      .finally(() => {
        this.leasePending--;
      });
    return this.leaseOps;
  }
}
