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

/** msgpack's header of a string of `bytes` bytes, as msgpackr writes it (fixstr, str8, str16, str32). */
function strHeader(bytes: number): Buffer {
  if (bytes < 0x20) return Buffer.from([0xa0 | bytes]);
  if (bytes < 0x100) return Buffer.from([0xd9, bytes]);
  if (bytes < 0x10000) return Buffer.from([0xda, bytes >> 8, bytes & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = 0xdb;
  b.writeUInt32BE(bytes, 1);
  return b;
}

export class CompletionArgsWriter {
  private made: { terms: FixedTerms; head: Buffer; tail: Buffer; metricsKey: string } | undefined;
  /** Times the fixed bytes were made (tests read it). */
  builds = 0;
  /** Completions' arguments written (tests read it). */
  writes = 0;
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
    const terms: FixedTerms = {
      name: opts.name,
      keepJobs: scripts.getKeepJobs(removeOnComplete, opts.removeOnComplete),
      limiter: opts.limiter,
      lockDuration: opts.lockDuration,
      attempts: jobOpts.attempts,
      maxMetricsSize: opts.metrics?.maxDataPoints ? opts.metrics.maxDataPoints : '',
      fpof: !!jobOpts?.failParentOnFailure,
      cpof: !!jobOpts?.continueParentOnFailure,
      idof: !!jobOpts?.ignoreDependencyOnFailure,
      rdof: !!jobOpts?.removeDependencyOnFailure,
    };
    let made = this.made;
    if (!made || !this.same(made.terms, terms)) {
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
    const bytes = Buffer.byteLength(token);
    const header = strHeader(bytes);
    const packed = Buffer.allocUnsafe(made.head.length + header.length + bytes + made.tail.length);
    let at = made.head.copy(packed, 0);
    at += header.copy(packed, at);
    at += packed.write(token, at);
    made.tail.copy(packed, at);
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

  private same(was: FixedTerms, now: FixedTerms): boolean {
    return (
      was.name === now.name &&
      sameTerm(was.keepJobs, now.keepJobs) &&
      was.limiter === now.limiter &&
      was.lockDuration === now.lockDuration &&
      was.attempts === now.attempts &&
      was.maxMetricsSize === now.maxMetricsSize &&
      was.fpof === now.fpof &&
      was.cpof === now.cpof &&
      was.idof === now.idof &&
      was.rdof === now.rdof
    );
  }
}
