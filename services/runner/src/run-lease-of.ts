/**
 * A run's fair-share lease as the runner hands it to the run's attempt start and end
 * (fair-share.ts `runLease`, `fetchedLease`; @islet/runs' `RunLease`).
 */
import type { SandboxMode } from '@islet/protocol';
import type { LeaseAnswer } from '@islet/runs';
import type { JobLease } from './fair-share.ts';

/** A run's lease's view of its fair share (`createFairShare`'s held leases and hand-ons). */
export interface LeaseBook {
  granted(mode: SandboxMode, tenant: string, jobId: string, answer: LeaseAnswer): void;
  isHeld(mode: SandboxMode, jobId: string): boolean;
  forget(mode: SandboxMode, jobId: string): void;
  handOn(mode: SandboxMode, tenant: string, jobId: string): void;
}

/**
 * A run's lease: its terms, its answer once taken, its release by the end. One object a run whose
 * methods are its class's (round 47 `runner-cpu`: it was the terms spread into a literal with the
 * fetch's answer spread in and three closures, ~12 µs of samples a run at 16 clients).
 */
export class RunLeaseOf implements JobLease {
  readonly mode: SandboxMode;
  readonly tenant: string;
  readonly jobId: string;
  readonly share: number;
  readonly cap: number;
  readonly leaseMs: number;
  /** Set only when the fetch began the attempt (`'begun' in` a lease reads it: call-journal.ts). */
  begun?: unknown;
  answer: LeaseAnswer | undefined = undefined;
  endReleased = false;
  deferEnd?: JobLease['deferEnd'];
  private readonly book: LeaseBook;

  constructor(
    book: LeaseBook,
    mode: SandboxMode,
    tenant: string,
    jobId: string,
    share: number,
    cap: number,
    leaseMs: number,
    begun: unknown,
  ) {
    this.book = book;
    this.mode = mode;
    this.tenant = tenant;
    this.jobId = jobId;
    this.share = share;
    this.cap = cap;
    this.leaseMs = leaseMs;
    if (begun !== undefined) this.begun = begun;
  }

  acquired(answer: LeaseAnswer): void {
    this.answer = answer;
    this.book.granted(this.mode, this.tenant, this.jobId, answer);
  }

  held(): boolean {
    return this.book.isHeld(this.mode, this.jobId);
  }

  released(next: { jobId: string; tenant: string } | undefined): void {
    this.book.forget(this.mode, this.jobId);
    this.endReleased = true;
    if (next) this.book.handOn(this.mode, next.tenant, next.jobId);
  }
}
