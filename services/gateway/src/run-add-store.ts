/**
 * A run's job added without BullMQ's `Queue.add`: the same call of its `addStandardJob` script
 * (through `Scripts.execCommand`, so the hand-off of handoff-add-store.ts applies alike) with the
 * same keys and byte-identical arguments, built here without the `Job` object, its JSON of unset
 * fields, its option checks and the layers of promises `Queue.add` goes through on every submit.
 * Only the options a run's job has (`runJobOptions`, plus `jobId`), a queue without default job
 * options, nobody listening for the queue's `waiting` event and the BullMQ version this was
 * written against: anything else goes to `Queue.add` (`run-add-store.test.ts` holds both to the
 * same bytes).
 */
import type { AdmissionRide } from '@islet/runs';
import type { Queue, RedisClient } from 'bullmq';
import { version } from 'bullmq/dist/esm/version.js';
import { Packr } from 'msgpackr';
import { ridingAddOf } from './handoff-add-store.ts';

/** BullMQ's encoder of a job's options and its script arguments (its `scripts.js`). */
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

/** msgpack encodes the adds made (1–3 µs each warm, more cold): none a submit once its templates exist. */
const packs = { count: 0 };
/** How many msgpack encodes the adds made so far (tests: none a submit once warm). */
export function addPackCount(): number {
  return packs.count;
}
function pack(value: unknown): Buffer {
  packs.count++;
  return packer.pack(value);
}

/**
 * Where one value sits in a packed template: `value` packed into two templates with two
 * placeholders of one shape, the bytes that differ are its and only its (contiguous, `size` long).
 */
function spot(a: Buffer, b: Buffer, size: number): number | undefined {
  if (a.length !== b.length) return undefined;
  let first = -1;
  let last = -1;
  for (let i = 0; i < a.length; i++)
    if (a[i] !== b[i]) {
      if (first < 0) first = i;
      last = i;
    }
  // Placeholders differ in every byte, so the run of differing bytes is exactly the value's.
  return first >= 0 && last - first + 1 === size ? first : undefined;
}

/** Where a float64 sits in templates `a` and `b` packed with STAMP_A and STAMP_B (as `spot`). */
function stampSpot(a: Buffer, b: Buffer): number | undefined {
  if (a.length !== b.length) return undefined;
  let first = -1;
  let last = -1;
  for (let i = 0; i < a.length; i++)
    if (a[i] !== b[i]) {
      if (first < 0) first = i;
      last = i;
    }
  // A float64's leading and trailing bytes may agree: its 8 bytes are the ones behind the 0xcb
  // that covers every differing byte and reads back as the placeholder on both sides.
  for (let at = Math.max(1, last - 7); at <= first; at++)
    if (a[at - 1] === 0xcb && a.readDoubleBE(at) === STAMP_A && b.readDoubleBE(at) === STAMP_B) return at;
  return undefined;
}

/** Whether `o`'s own keys are `names`, in that order (the order msgpack writes them in). */
function keysAre(o: object, names: readonly string[]): boolean {
  let i = 0;
  for (const k in o) if (k !== names[i++]) return false;
  return i === names.length;
}

/**
 * Whether `o` is a run job's options as `runJobOptions` makes them (keys, their order, their
 * types): the only options packed from a template; anything else is packed as given.
 */
function runOptionsShape(o: RunJobOptions): boolean {
  const { backoff: b, removeOnComplete: c, removeOnFail: f } = o;
  return (
    keysAre(o, OPTION_NAMES) &&
    typeof o.attempts === 'number' &&
    typeof b === 'object' &&
    b !== null &&
    keysAre(b, ['type', 'delay']) &&
    typeof b.type === 'string' &&
    typeof b.delay === 'number' &&
    typeof c === 'object' &&
    c !== null &&
    keysAre(c, ['age', 'count']) &&
    typeof c.age === 'number' &&
    typeof c.count === 'number' &&
    typeof f === 'object' &&
    f !== null &&
    keysAre(f, ['age']) &&
    typeof f.age === 'number'
  );
}

/** A packed template and where the job id's bytes go in it. */
interface Template {
  bytes: Buffer;
  idAt: number;
}

/** A template's copy with the job id's bytes (ASCII, the placeholder's length) written in. */
function withId(template: Buffer, at: number, id: string): Buffer {
  const out = Buffer.allocUnsafe(template.length);
  template.copy(out);
  out.write(id, at, 'latin1');
  return out;
}

/** ASCII: one byte a character in UTF-8, as msgpack writes it, so its bytes go in as latin1. */
const ASCII = /^[\x00-\x7f]+$/;
/** An integer msgpackr writes as a float64 (0xcb): past 32 bits, a ms timestamp's. */
const asFloat64 = (n: number) => Number.isSafeInteger(n) && n >= 2 ** 32;
/** Two float64 placeholders (the timestamp's spot in a template). */
const STAMP_A = 2 ** 40 + 0x0102030405;
const STAMP_B = 2 ** 45 + 0x7a6b5c4d3e;

/** The options of a run's job (`@islet/runs` `runJobOptions`). */
export interface RunJobOptions {
  jobId: string;
  attempts: number;
  backoff: { type: 'fixed'; delay: number };
  removeOnComplete: { age: number; count: number };
  removeOnFail: { age: number };
}

const OPTION_NAMES = ['jobId', 'attempts', 'backoff', 'removeOnComplete', 'removeOnFail'];

interface AddScripts {
  execCommand(client: RedisClient, name: string, args: unknown[]): Promise<unknown>;
  finishedErrors(args: { code: number; command: string }): Error;
  version: string;
}

/**
 * Adds a job as `queue.add(name, data, opts)` would; resolves to its id. `ride`: a submit's
 * admission, carried in the add's script where the queue's adds hand off (handoff-add-store.ts),
 * else sent alone right before the add; a refused admission adds nothing (resolves to '').
 */
export type RunAdd = (
  name: string,
  data: unknown,
  opts: RunJobOptions,
  ride?: AdmissionRide,
) => Promise<string>;

/** `queue`'s adds of run jobs, built here where they can be (see the header), else `queue.add`. */
export function runAdds(queue: Queue): RunAdd {
  const viaQueue: RunAdd = async (name, data, opts, ride) => {
    ride?.alone();
    return (await queue.add(name, data, opts)).id ?? opts.jobId;
  };
  const scripts = (queue as unknown as { scripts?: AddScripts }).scripts;
  const defaults = (queue as unknown as { jobsOpts?: object }).jobsOpts;
  if (
    // Telemetry puts its context into each job's options.
    queue.opts.telemetry !== undefined ||
    !scripts ||
    typeof scripts.execCommand !== 'function' ||
    typeof scripts.finishedErrors !== 'function' ||
    scripts.version !== version ||
    (defaults !== undefined && Object.keys(defaults).length > 0)
  )
    return viaQueue;
  const k = queue.keys;
  // addStandardJobArgs' keys, in its order.
  const keys = [k.wait, k.paused, k.meta, k.id, k.completed, k.delayed, k.active, k.events, k.marker];
  const prefix = k[''];
  // The two packed arguments of an add differ between runs of a kind only in the job id and the
  // timestamp: each is packed once a shape (id length; the name; the options but the id), and an
  // add copies its template and writes the id's and the timestamp's bytes in place, the bytes
  // msgpackr writes (run-add-store.test.ts holds them to it).
  // The last template of each kind first (one a queue, in practice), then one a shape.
  const argsTemplates = new Map<string, (Template & { stampAt: number }) | null>();
  let lastArgs: { name: string; idLength: number; t: Template & { stampAt: number } } | undefined;
  const packedArgs = (id: string, name: string, stamp: number): Buffer => {
    if (!asFloat64(stamp) || !ASCII.test(id)) return pack(argsOf(id, name, stamp));
    let t = lastArgs && lastArgs.name === name && lastArgs.idLength === id.length ? lastArgs.t : undefined;
    if (!t) {
      const key = `${id.length}:${name}`;
      let known = argsTemplates.get(key);
      if (known === undefined) {
        const a = pack(argsOf('\x01'.repeat(id.length), name, STAMP_A));
        const idAt = spot(a, pack(argsOf('\x02'.repeat(id.length), name, STAMP_A)), id.length);
        const stampAt = stampSpot(a, pack(argsOf('\x01'.repeat(id.length), name, STAMP_B)));
        known = idAt === undefined || stampAt === undefined ? null : { bytes: Buffer.from(a), idAt, stampAt };
        argsTemplates.set(key, known);
      }
      if (!known) return pack(argsOf(id, name, stamp));
      t = known;
      lastArgs = { name, idLength: id.length, t };
    }
    const out = withId(t.bytes, t.idAt, id);
    out.writeDoubleBE(stamp, t.stampAt);
    return out;
  };
  const argsOf = (id: string, name: string, stamp: number) => [
    prefix,
    id,
    name,
    stamp,
    null,
    null,
    undefined,
    undefined,
    null,
  ];
  // As the Job's constructor orders them: `attempts` first, then the add's options as given.
  const optsOf = (opts: RunJobOptions, id: string) => Object.assign({ attempts: 0 }, opts, { jobId: id });
  const optsTemplates = new Map<string, Template | null>();
  let lastOpts: { key: RunJobOptions; idLength: number; t: Template } | undefined;
  const sameOptions = (a: RunJobOptions, b: RunJobOptions) =>
    a.attempts === b.attempts &&
    a.backoff.type === b.backoff.type &&
    a.backoff.delay === b.backoff.delay &&
    a.removeOnComplete.age === b.removeOnComplete.age &&
    a.removeOnComplete.count === b.removeOnComplete.count &&
    a.removeOnFail.age === b.removeOnFail.age;
  const packedOpts = (opts: RunJobOptions): Buffer => {
    const id = opts.jobId;
    if (!ASCII.test(id) || !runOptionsShape(opts)) return pack(optsOf(opts, id));
    let t =
      lastOpts && lastOpts.idLength === id.length && sameOptions(lastOpts.key, opts) ? lastOpts.t : undefined;
    if (!t) {
      const { attempts: n, backoff: b, removeOnComplete: c, removeOnFail: f } = opts;
      const key = `${id.length}:${n}:${b.type}:${b.delay}:${c.age}:${c.count}:${f.age}`;
      let known = optsTemplates.get(key);
      if (known === undefined) {
        const a = pack(optsOf(opts, '\x01'.repeat(id.length)));
        const idAt = spot(a, pack(optsOf(opts, '\x02'.repeat(id.length))), id.length);
        known = idAt === undefined ? null : { bytes: Buffer.from(a), idAt };
        optsTemplates.set(key, known);
      }
      if (!known) return pack(optsOf(opts, id));
      t = known;
      lastOpts = { key: structuredClone(opts), idLength: id.length, t };
    }
    return withId(t.bytes, t.idAt, id);
  };
  return async (name, data, opts, ride) => {
    const id = opts.jobId;
    if (
      queue.listenerCount('waiting') > 0 ||
      // BullMQ's own refusals of an id ('0', an integer, a ':' outside its repeat form): its words.
      id === '' ||
      id.includes(':') ||
      `${Number.parseInt(id, 10)}` === id ||
      Object.keys(opts).some((o) => !OPTION_NAMES.includes(o))
    )
      return viaQueue(name, data, opts, ride);
    const client = await queue.client;
    const encodedOpts = packedOpts(opts);
    const args = packedArgs(id, name, Date.now());
    const addArgs = [...keys, args, JSON.stringify(data === undefined ? {} : data), encodedOpts];
    const riding = ride && ridingAddOf(queue);
    if (ride && !riding) ride.alone();
    const result = riding
      ? await riding(ride, addArgs)
      : await scripts.execCommand(client, 'addStandardJob', addArgs);
    // The admission refused: nothing added.
    if (result === undefined) return '';
    if (typeof result === 'number' && result < 0)
      throw scripts.finishedErrors({ code: result, command: 'addJob' });
    return String(result);
  };
}
