/**
 * A run job's options packed once and reused while a submit's options are the same (run-add-store.ts):
 * every run of a deployment has the same (`runJobOptions` with one `attempts`), and msgpackr's
 * `pack` of them is a few µs of every submit (round 43 `send-floor`, "Found, left" 3). The bytes
 * must stay what BullMQ would write, so "the same" is exact, as msgpackr walks an object: the same
 * own enumerable keys in the same order (`for … in` with `hasOwnProperty`, msgpackr's plain-object
 * walk), values the same by `Object.is` (so `0` is not `-0`), nested plain objects alike. Anything
 * else among them (an array, a Date, a class instance, a bigint, a getter, an own
 * `hasOwnProperty`) is packed every time. The copy of the job's id (`jobId`), which the packed options leave out, may
 * differ.
 */

/** An object's keys and values, as msgpackr would walk them; a leaf is itself. */
class Shape {
  readonly keys: string[];
  readonly values: unknown[];
  constructor(keys: string[], values: unknown[]) {
    this.keys = keys;
    this.values = values;
  }
}

/** A value `Shape` does not follow: its options are packed every time. */
const UNFIT = Symbol('unfit');
/** The top level's `jobId`: any value (it is not in the bytes). */
const ANY = Symbol('any');

const hasOwn = (o: object, k: string) => Object.hasOwn(o, k);

/** A plain object msgpackr walks with `for … in` and `hasOwnProperty` (`constructor === Object`). */
function plain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && v.constructor === Object && !hasOwn(v, 'hasOwnProperty');
}

function shapeOf(v: unknown): unknown {
  const t = typeof v;
  if (v === null || v === undefined || t === 'string' || t === 'number' || t === 'boolean') return v;
  if (!plain(v)) return UNFIT;
  const keys: string[] = [];
  const values: unknown[] = [];
  for (const k in v) {
    if (!hasOwn(v, k)) continue;
    // A getter could give the packed bytes one value and the shape another.
    if (Object.getOwnPropertyDescriptor(v, k)?.get) return UNFIT;
    const s = shapeOf(v[k]);
    if (s === UNFIT) return UNFIT;
    keys.push(k);
    values.push(s);
  }
  return new Shape(keys, values);
}

function matches(v: unknown, s: unknown): boolean {
  if (s === ANY) return true;
  if (!(s instanceof Shape)) return Object.is(v, s);
  if (!plain(v)) return false;
  let i = 0;
  for (const k in v) {
    if (!hasOwn(v, k)) continue;
    if (k !== s.keys[i] || !matches(v[k], s.values[i])) return false;
    i++;
  }
  return i === s.keys.length;
}

/** `pack`'s bytes of a job's options, packed again only when they are not the last packed ones. */
export interface OptionsPacker {
  (opts: object): Buffer;
  /** How many options were packed (the rest were the last packed bytes): tests. */
  readonly packed: number;
}

/** `pack`: the job's options (with `jobId`) → BullMQ's bytes of them without `jobId`. */
export function packedOnce(pack: (opts: object) => Buffer): OptionsPacker {
  let last: Shape | undefined;
  let bytes: Buffer | undefined;
  let packed = 0;
  const packer = (opts: object): Buffer => {
    if (last !== undefined && bytes !== undefined && matches(opts, last)) return bytes;
    packed++;
    // A copy: msgpackr hands out a view of its own buffer.
    const made = Buffer.from(pack(opts));
    const shape = shapeOf(opts);
    if (shape instanceof Shape) {
      const at = shape.keys.indexOf('jobId');
      if (at >= 0) shape.values[at] = ANY;
      last = shape;
      bytes = made;
    } else {
      last = undefined;
      bytes = undefined;
    }
    return made;
  };
  Object.defineProperty(packer, 'packed', { get: () => packed });
  return packer as OptionsPacker;
}
