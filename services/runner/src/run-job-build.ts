/**
 * A fetched job's `Job` built as BullMQ's `Job.fromJSON` builds it, but its options decoded once a
 * worker: every run's job stores the same options' text (the gateway's add leaves the job's id out
 * of it: run-add-store.ts), and `fromJSON` parsed and decoded that text anew on every pick-up
 * (`Job.optsFromJSON`: a `JSON.parse`, `Object.entries` and a decode loop, 13–16 µs of the
 * hand-off's 46–49 µs `fromJSON` in the box's slow mode: test/bench/README.md, round 40
 * `seq-stages` §2). Here the text's decoded options are kept with the text; a job with the same
 * text gets a fresh copy of them (the constructor's own top level, its object values copied here:
 * no object shared between two jobs, as before), any other text is decoded by BullMQ's own
 * `optsFromJSON` and kept in its place.
 *
 * The rest is `fromJSON`'s own field reads, in its order, so the job is the same object it built
 * (run-job-build.test.ts holds the two to the same fields): its later life (lock renewal,
 * completion, failure, retries, stalled checks) reads nothing else. Written against one BullMQ
 * version: with another, BullMQ's `fromJSON` builds every job.
 */
import { Job, type JobJsonRaw } from 'bullmq';
import { version } from 'bullmq/dist/esm/version.js';

/** The BullMQ version whose `Job.fromJSON` this restates. */
export const FROM_JSON_VERSION = '5.81.5';

/** A JSON value copied, so no object in it is shared with the one kept. */
function copyJson(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = copyJson((value as Record<string, unknown>)[key]);
  return out;
}

/** BullMQ's `getTraces` (job.js, module-private). */
function tracesOf(stacktrace: string | undefined): string[] {
  if (!stacktrace) return [];
  try {
    const traces: unknown = JSON.parse(stacktrace);
    return Array.isArray(traces) ? (traces as string[]) : [];
  } catch {
    return [];
  }
}

/** BullMQ's `getReturnValue` (job.js, module-private; it logs a corrupt value, not read here). */
function returnValueOf(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

type QueueOf = ConstructorParameters<typeof Job>[0];
type JobFields = Record<string, unknown>;

export class RunJobBuilder {
  /** The last options' text decoded, and what it decoded to (never handed out itself). */
  private optsText: string | undefined;
  private opts: Record<string, unknown> | undefined;
  /** The kept options' keys whose values are objects (the ones a job copies). */
  private nested: readonly string[] = [];
  /** Options' texts decoded (`Job.optsFromJSON` calls; tests read it). */
  decodes = 0;
  /** Jobs built here (tests read it). */
  builds = 0;
  private readonly own = version === FROM_JSON_VERSION;

  /** The job `Job.fromJSON(queue, json, jobId)` would make. */
  build(queue: QueueOf, json: JobJsonRaw, jobId?: string): Job {
    if (!this.own) return Job.fromJSON(queue, json, jobId);
    this.builds++;
    const raw = json as unknown as Record<string, string | undefined>;
    const data: unknown = JSON.parse(json.data || '{}');
    const job = new Job(queue, json.name, data, this.optsOf(json.opts) as Job['opts'], json.id || jobId);
    // The constructor made the job's own options object (`__rest` and `Object.assign` of what it was
    // given, read only): what is still shared with the kept decoding is its object values, copied.
    const jobOpts = job.opts as unknown as Record<string, unknown>;
    for (const key of this.nested) {
      const value = jobOpts[key];
      if (value !== null && typeof value === 'object') jobOpts[key] = copyJson(value);
    }
    const fields = job as unknown as JobFields;
    // Radix 10 where BullMQ gives none: the fields are decimal integers its scripts write, read the same.
    job.progress = json.progress ? JSON.parse(json.progress) : 0;
    job.delay = Number.parseInt(json.delay, 10);
    job.priority = Number.parseInt(json.priority, 10);
    job.timestamp = Number.parseInt(json.timestamp, 10);
    if (json.finishedOn) job.finishedOn = Number.parseInt(json.finishedOn, 10);
    if (json.processedOn) job.processedOn = Number.parseInt(json.processedOn, 10);
    if (json.rjk) job.repeatJobKey = json.rjk;
    if (json.deid) {
      fields.debounceId = json.deid;
      job.deduplicationId = json.deid;
    }
    if (json.failedReason) job.failedReason = json.failedReason;
    job.attemptsStarted = Number.parseInt(json.ats || '0', 10);
    job.attemptsMade = Number.parseInt(json.attemptsMade || json.atm || '0', 10);
    job.stalledCounter = Number.parseInt(json.stc || '0', 10);
    if (raw.defa) fields.deferredFailure = raw.defa;
    job.stacktrace = tracesOf(json.stacktrace);
    if (typeof json.returnvalue === 'string') job.returnvalue = returnValueOf(json.returnvalue);
    job.parentKey = json.parentKey ? json.parentKey : undefined;
    job.parent = json.parent ? JSON.parse(json.parent) : undefined;
    if (json.pb) job.processedBy = json.pb;
    if (raw.nrjid) fields.nextRepeatableJobId = raw.nrjid;
    return job;
  }

  /**
   * `Job.optsFromJSON(text)`, the text's decoding kept and given to the constructor itself: it
   * copies the top level into the job's own object and writes nothing into what it was given
   * (job.js, `FROM_JSON_VERSION`), so the one copy left is of the object values (`build`). The
   * top level's `copyJson` a job was a second copy of what the constructor copies (round 52
   * `runner-own`).
   */
  private optsOf(text: string | undefined): unknown {
    if (text === undefined || text !== this.optsText || !this.opts) {
      this.decodes++;
      const opts = Job.optsFromJSON(text) as Record<string, unknown>;
      this.optsText = text;
      this.opts = opts;
      this.nested = Object.keys(opts).filter((key) => opts[key] !== null && typeof opts[key] === 'object');
    }
    return this.opts;
  }
}
