/**
 * A job's completion's keys and arguments as BullMQ's `Scripts.moveToCompletedArgs` builds them
 * (the same array, the same bytes), with what is the same at every completion of a worker made
 * once: its msgpack'd options but the lock token (name, keepJobs, limiter, lockDuration, attempts,
 * metrics, the parent flags) and the queue's keys. BullMQ packed an 11-field object and made the
 * metrics key anew at every completion (`moveToCompletedArgs` 23 µs of the runner's end in the
 * box's slow mode: test/bench/README.md, round 40 `seq-stages` §3); here the token alone is
 * packed between the options' fixed bytes, as `IdleTermsWriter` (handoff-store.ts) splices a
 * registration's. Made again when any fixed term changes. Written against one BullMQ version:
 * with another, BullMQ's own builds them (`CompletionArgsWriter.of` answers undefined).
 */
import { BoundedMap } from '@islet/core';
import { Packr } from 'msgpackr';
import { FROM_JSON_VERSION } from './run-job-build.ts';

/** BullMQ's encoder of its script arguments (its `scripts.js`). */
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
/** The key `token` as msgpack writes it (fixstr of 5), the first of the packed options. */
const TOKEN_KEY = Buffer.from([0xa5, ...Buffer.from('token')]);

/** What this reads of BullMQ's `Scripts` (private there). */
export interface CompletionScripts {
  version: string;
  moveToFinishedKeys: (string | undefined)[];
  getKeepJobs(shouldRemove: unknown, workerKeepJobs: unknown): unknown;
  queue: {
    keys: Record<string, string>;
    opts: {
      name?: string;
      removeOnComplete?: unknown;
      limiter?: unknown;
      lockDuration?: number;
      metrics?: { maxDataPoints?: number };
    };
    closing?: unknown;
    toKey(type: string): string;
  };
}

/** The job as the completion reads it. */
interface CompletingJob {
  id?: string;
  opts: {
    attempts?: number;
    failParentOnFailure?: boolean;
    continueParentOnFailure?: boolean;
    ignoreDependencyOnFailure?: boolean;
    removeDependencyOnFailure?: boolean;
  };
}

/** The options packed but the token, in BullMQ's order after it. */
interface FixedTerms {
  name: unknown;
  keepJobs: unknown;
  limiter: unknown;
  lockDuration: unknown;
  attempts: unknown;
  maxMetricsSize: unknown;
  fpof: boolean;
  cpof: boolean;
  idof: boolean;
  rdof: boolean;
}

/** Whether `a` and `b` are the same value, plain objects of primitives compared field by field. */
function sameTerm(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i] as string;
    if (k !== kb[i]) return false;
    const va = (a as Record<string, unknown>)[k];
    if ((va !== null && typeof va === 'object') || va !== (b as Record<string, unknown>)[k]) return false;
  }
  return true;
}

/** Tokens whose packed options are kept made ahead (`prepare`). */
const PREPARED_MAX = 8;

/** Bytes of the slab the packed options are written into (a new one when it is full). */
const SLAB_BYTES = 16 * 1024;

/** msgpack's header of a string of `bytes` bytes, as msgpackr writes it (fixstr, str8, str16, str32). */
function strHeader(bytes: number): number[] {
  if (bytes < 0x20) return [0xa0 | bytes];
  if (bytes < 0x100) return [0xd9, bytes];
  if (bytes < 0x10000) return [0xda, bytes >> 8, bytes & 0xff];
  return [0xdb, (bytes >>> 24) & 0xff, (bytes >> 16) & 0xff, (bytes >> 8) & 0xff, bytes & 0xff];
}

/** Whether `text` is ASCII only (one byte a character in UTF-8). */
function ascii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

export class CompletionArgsWriter {
  private made: { terms: FixedTerms; head: Buffer; tail: Buffer; metricsKey: string } | undefined;
  /** Where the packed options are written, and how far (`packed`). */
  private slab: Buffer | undefined;
  private slabAt = 0;
  /** Times the fixed bytes were made (tests read it). */
  builds = 0;
  /** Completions' arguments written (tests read it). */
  writes = 0;
  /** Completions whose packed options were made before their job came (`prepare`; tests read it). */
  preparedUses = 0;
  /**
   * The packed options made for tokens before their jobs came (`prepare`), with the fixed parts
   * they used, at least the last `PREPARED_MAX` (a worker registers again while its handed run goes
   * on; a registration whose pop brought nothing leaves its token unused). Core's BoundedMap: no
   * Map iterator walked to forget the oldest (gateway cache-bounds.test.ts).
   */
  private readonly prepared = new BoundedMap<string, { made: object; packed: Buffer }>(2 * PREPARED_MAX);
  private readonly scripts: CompletionScripts;

  private constructor(scripts: CompletionScripts) {
    this.scripts = scripts;
  }

  /** A writer for these scripts, or undefined where BullMQ's own must build (another version, another shape). */
  static of(scripts: unknown): CompletionArgsWriter | undefined {
    const s = scripts as Partial<CompletionScripts> | undefined;
    if (
      !s ||
      s.version !== FROM_JSON_VERSION ||
      !Array.isArray(s.moveToFinishedKeys) ||
      s.moveToFinishedKeys.length !== 14 ||
      typeof s.getKeepJobs !== 'function' ||
      typeof s.queue?.toKey !== 'function'
    )
      return undefined;
    return new CompletionArgsWriter(s as CompletionScripts);
  }

  /** `moveToCompletedArgs(job, returnvalue, removeOnComplete, token, fetchNext)`, as BullMQ's. */
  args(
    completing: unknown,
    returnvalue: string,
    removeOnComplete: unknown,
    token: string,
    fetchNext = false,
  ): unknown[] {
    const timestamp = Date.now();
    const job = completing as CompletingJob;
    const scripts = this.scripts;
    const queue = scripts.queue;
    const opts = queue.opts;
    const jobOpts = job.opts;
    const keepJobs = scripts.getKeepJobs(removeOnComplete, opts.removeOnComplete);
    const maxMetricsSize = opts.metrics?.maxDataPoints ? opts.metrics.maxDataPoints : '';
    let made = this.made;
    // Compared term by term, no object made (the common case: all the same as the last).
    const was = made?.terms;
    const same =
      was !== undefined &&
      was.name === opts.name &&
      sameTerm(was.keepJobs, keepJobs) &&
      was.limiter === opts.limiter &&
      was.lockDuration === opts.lockDuration &&
      was.attempts === jobOpts.attempts &&
      was.maxMetricsSize === maxMetricsSize &&
      was.fpof === !!jobOpts?.failParentOnFailure &&
      was.cpof === !!jobOpts?.continueParentOnFailure &&
      was.idof === !!jobOpts?.ignoreDependencyOnFailure &&
      was.rdof === !!jobOpts?.removeDependencyOnFailure;
    if (!made || !same) {
      const terms: FixedTerms = {
        name: opts.name,
        keepJobs,
        limiter: opts.limiter,
        lockDuration: opts.lockDuration,
        attempts: jobOpts.attempts,
        maxMetricsSize,
        fpof: !!jobOpts?.failParentOnFailure,
        cpof: !!jobOpts?.continueParentOnFailure,
        idof: !!jobOpts?.ignoreDependencyOnFailure,
        rdof: !!jobOpts?.removeDependencyOnFailure,
      };
      // Packed with an empty token: the map's header (msgpackr's map16) and the key `token`, its
      // value (one byte, fixstr 0xa0), then the fixed terms.
      const whole = packer.pack({ token: '', ...terms });
      const at = whole.indexOf(TOKEN_KEY) + TOKEN_KEY.length;
      made = {
        terms,
        head: Buffer.from(whole.subarray(0, at)),
        tail: Buffer.from(whole.subarray(at + 1)),
        metricsKey: queue.toKey('metrics:completed'),
      };
      this.made = made;
      this.builds++;
    }
    this.writes++;
    const ready = this.prepared.size > 0 ? this.prepared.get(token) : undefined;
    let packed: Buffer;
    if (ready !== undefined && ready.made === made) {
      packed = ready.packed;
      this.preparedUses++;
    } else packed = this.packed(made.head, token, made.tail);
    if (ready !== undefined) this.prepared.delete(token);
    const k = scripts.moveToFinishedKeys;
    const queueKeys = queue.keys;
    return [
      k[0],
      k[1],
      k[2],
      k[3],
      k[4],
      k[5],
      k[6],
      k[7],
      k[8],
      k[9],
      queueKeys.completed,
      queue.toKey(job.id ?? ''),
      made.metricsKey,
      queueKeys.marker,
      job.id,
      timestamp,
      'returnvalue',
      typeof returnvalue === 'undefined' ? 'null' : returnvalue,
      'completed',
      !fetchNext || queue.closing ? 0 : 1,
      queueKeys[''],
      packed,
      undefined,
    ];
  }

  /**
   * The packed options for `token`, made now for a completion to come: a hand-off's token is made
   * at the worker's registration (handoff-wait.ts), before its job comes, so its packing is done
   * while the worker waits idle, not on the run's end (11 µs p50 there cold, round 40
   * `bull-path`). Used only if the fixed parts are still the ones it was made with; nothing
   * before a first completion made them.
   */
  prepare(token: string): void {
    const made = this.made;
    if (!made) return;
    this.prepared.set(token, { made, packed: this.packed(made.head, token, made.tail) });
  }

  /**
   * `head`, the token as a msgpack string, `tail`: written into a slab as msgpackr writes into its
   * own (set and a loop of bytes, no call into Node's native Buffer code: those were ~16 µs a
   * completion in the runner's cold end, round 40 `bull-path`), the slice handed out never written
   * again. A token not ASCII-only goes through Buffer's UTF-8 encoder.
   */
  private packed(head: Buffer, token: string, tail: Buffer): Buffer {
    const bytes = ascii(token) ? token.length : Buffer.byteLength(token);
    const header = strHeader(bytes);
    const size = head.length + header.length + bytes + tail.length;
    if (size > SLAB_BYTES) return Buffer.concat([head, Buffer.from(header), Buffer.from(token), tail]);
    let slab = this.slab;
    let at = this.slabAt;
    if (!slab || at + size > slab.length) {
      slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.slab = slab;
      at = 0;
    }
    const start = at;
    slab.set(head, at);
    at += head.length;
    for (let i = 0; i < header.length; i++) slab[at++] = header[i] as number;
    if (bytes === token.length) for (let i = 0; i < bytes; i++) slab[at++] = token.charCodeAt(i);
    else at += slab.write(token, at);
    slab.set(tail, at);
    at += tail.length;
    this.slabAt = at;
    return slab.subarray(start, at);
  }
}
