/**
 * A BullMQ Worker whose concurrency covers slots and parked runs (slot-gate.ts) but which takes a
 * new job only while a slot is free for it. BullMQ's main loop fetches while it holds fewer jobs
 * than its concurrency; the gate is applied where a fetch moves a job to active, so a worker whose
 * slots are all busy waits there (holding no job it cannot start) and fetches the moment a run
 * parks or ends. BullMQ fetches several jobs in a row before it starts any (it starts them only
 * when a fetch brings none), so with no slot free and fetched jobs not yet started the fetch
 * answers "no job" at once instead of waiting. Jobs BullMQ fetches with a completion
 * (moveToCompleted's next job) skip this point; they wait for a slot in the processor
 * (`SlotGate.take`), at most one at a time.
 */
import { type Job, type RedisClient, Worker } from 'bullmq';
import type { SlotGate } from './slot-gate.ts';

export class ParkingWorker<DataType> extends Worker<DataType> {
  gate: SlotGate | undefined;

  protected override async moveToActive(
    client: RedisClient,
    token: string,
    name?: string,
  ): Promise<Job<DataType>> {
    const gate = this.gate;
    if (!gate) return super.moveToActive(client, token, name);
    const go = await gate.whenFetchable(token, () => this.closing !== undefined);
    if (go === 'later' || this.closing) {
      gate.fetched(token, false);
      // Never a loop of promises only: the event loop (lock renewals, the runs' own I/O) goes first.
      await new Promise((resolve) => setImmediate(resolve));
      // The wake-up that led here may be spent: the next fetch must look at the queue itself,
      // not wait for another (BullMQ keeps this flag private).
      (this as unknown as { drained: boolean }).drained = false;
      // No job: what BullMQ's own fetch answers when there is none; it then starts those it holds.
      return undefined as unknown as Job<DataType>;
    }
    let got = false;
    try {
      const job = await super.moveToActive(client, token, name);
      got = job !== undefined;
      return job;
    } finally {
      gate.fetched(token, got);
    }
  }

  override async close(force = false): Promise<void> {
    const closing = super.close(force);
    // A fetch waiting for a slot must not hold the close up: woken, it finds the worker closing.
    this.gate?.wakeFetches();
    return closing;
  }
}
