/**
 * One job's slot on a runner (slot-gate.ts) and its tenant's fair-share lease, as the executor
 * sees them while the run parks and comes back (call-parking.ts): parked, the run holds neither
 * the slot nor the lease; resumed, it holds both again.
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
    await this.leaseOp((l) => l.reclaim());
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
    this.leaseOps = this.leaseOps.then(() => op(lease)).catch(this.onError);
    return this.leaseOps;
  }
}
