/**
 * What a closing ParkingWorker (parking-worker.ts) gives back: a fetch refused, a job that reached
 * it after its close began, a run start no processor took. Apart so the worker stays under ~400 lines.
 */
import type { Job } from 'bullmq';
import type { Handed } from './handoff-store.ts';
import type { OneSlotMap } from './one-slot-map.ts';
import type { FetchStart } from './parking-worker-types.ts';
import type { SlotGate } from './slot-gate.ts';

/** What the give-backs read and write of their worker (its private maps, counters and state). */
export interface CloseHost {
  started: OneSlotMap<string, unknown>;
  keptFor: OneSlotMap<string, string>;
  gate: SlotGate | undefined;
  fetchStart: FetchStart | undefined;
  handOffWait: { take(): Handed | undefined; giveBack(handed: Handed): Promise<void> } | undefined;
  /** Resolves once BullMQ's close began (`closing` set: its loop then ends). */
  bullClosing: Promise<void>;
  /** Counts a fetch refused because the worker was closing (`fetchesRefusedClosing`). */
  refused(): void;
  /** Counts a job given back unrun (`jobsGivenBackClosing`). */
  givenBack(): void;
  emitError(err: Error): void;
}

/**
 * A fetch while closing: no job, and no loop of refusals either; it answers once BullMQ's close
 * began (its loop then stops fetching). A job handed over by a pop and not taken goes back.
 */
export async function refuseClosing<DataType>(host: CloseHost): Promise<Job<DataType>> {
  host.refused();
  const handed = host.handOffWait?.take();
  if (handed) {
    host.gate?.fetched(handed.token, false);
    host.givenBack();
    await host.handOffWait?.giveBack(handed);
  }
  await host.bullClosing;
  return undefined as unknown as Job<DataType>;
}

/** A job BullMQ brought after the close began: moved back to wait under its lock, its start's lease given back. */
export async function giveBackClosing<DataType>(
  host: CloseHost,
  job: Job<DataType>,
  token: string,
): Promise<undefined> {
  host.givenBack();
  try {
    await job.moveToWait(token);
  } catch (err) {
    // Its lock lapses then, and the stalled check of another runner takes it back.
    host.emitError(err as Error);
  }
  const id = job.id;
  if (id !== undefined && host.started.has(id)) await giveBackUntaken(host, job, host.started.get(id));
  const nextId = host.keptFor.get(token);
  host.keptFor.delete(token);
  if (nextId !== undefined) host.started.delete(nextId);
  host.gate?.fetched(token, false);
  return undefined;
}

/** A start no processor took: forgotten, and its lease, when granted, given back. */
export async function giveBackUntaken<DataType>(
  host: CloseHost,
  job: Job<DataType>,
  begun: unknown,
): Promise<void> {
  const id = String(job.id);
  host.started.delete(id);
  const lease = Array.isArray(begun) ? begun[3] : undefined;
  const tenant = (job.data as { tenant?: unknown }).tenant;
  if (Array.isArray(lease) && lease[0] === 1 && typeof tenant === 'string')
    await host.fetchStart?.giveBack?.(tenant, id);
}
