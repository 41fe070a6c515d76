/**
 * AES-256-GCM sealing of record fields at rest. The sealed text names its key id, so keys can
 * rotate: new text uses the active key, old text opens with whichever listed key sealed it.
 * Format: `v1.<kid>.<iv>.<tag>.<ciphertext>` (base64url parts).
 */
import {
  type CipherGCM,
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  type KeyObject,
  randomBytes,
  randomFillSync,
} from 'node:crypto';
import { decodeShort, encode12, encode16 } from './seal-text.ts';

export interface Sealer {
  /**
   * `bind`: what the text is for (a record's field and its run, say `pick\0<run id>`), authenticated
   * beside the key id, so the text opens only where it was sealed for: copied to another run's
   * record or another field, its open with that place's `bind` fails. Not stored in the text; the
   * reader names it again. Without it the text is bound to its key id alone (every field sealed
   * before round 40, and those still written without one).
   */
  seal(plaintext: string, bind?: string): string;
  open(sealed: string, bind?: string): string;
}

export class SealError extends Error {
  override name = 'SealError';
}

const KID = /^[A-Za-z0-9_-]{1,32}$/;
const IV_BYTES = 12;
/** GCM's whole tag, what `getAuthTag` gives and an open requires. */
const TAG_BYTES = 16;
/**
 * IVs come from one CSPRNG buffer refilled when used up, not a `randomBytes` call each: a gateway
 * seals a few values per binding call, and a generator call per IV was measurable on that path
 * (the same batching as Node's randomUUID cache; docs/decisions/measured-costs.md). Every IV is still fresh CSPRNG output, used once.
 */
const IV_POOL_BYTES = IV_BYTES * 512;

/**
 * The pool's IVs are handed out as views made once (no Buffer a seal), each once: a cipher copies
 * its IV into its own context as it is made, so the view is read only there, and `spent` then takes
 * its text and clears its bytes.
 */
interface IvSource {
  /** The next IV; the pool moves past it at once, so no later call hands it out again. */
  next(): Buffer;
  /** The IV `next` handed out last, as base64url; its bytes are cleared. */
  spent(): string;
}

function ivSource(): IvSource {
  const pool = Buffer.alloc(IV_POOL_BYTES);
  const views = Array.from({ length: IV_POOL_BYTES / IV_BYTES }, (_, i) =>
    pool.subarray(i * IV_BYTES, (i + 1) * IV_BYTES),
  );
  let offset = IV_POOL_BYTES;
  let last = 0;
  return {
    next() {
      if (offset + IV_BYTES > IV_POOL_BYTES) {
        randomFillSync(pool);
        offset = 0;
      }
      last = offset;
      offset += IV_BYTES;
      return views[last / IV_BYTES]!;
    },
    spent() {
      const text = encode12(pool, last);
      // Spent bytes are cleared at once, so no IV can be read twice from the pool.
      pool.fill(0, last, last + IV_BYTES);
      return text;
    },
  };
}

/**
 * A key as the ciphers take it: a KeyObject made once, not the raw bytes, which Node would turn into
 * a new KeyObject on every cipher (docs/decisions/measured-costs.md); and its id as the AAD.
 */
interface PreparedKey {
  key: KeyObject;
  aad: Buffer;
  /** `kid\0` written once, the rest room for a bind's AAD (`bindAad`). */
  bound: Buffer;
  /** Its `kid\0`'s bytes. */
  boundPrefix: number;
}

/** The bytes a key keeps for its AAD with a bind: `kid\0` and a bind of up to ~150 characters. */
const BOUND_AAD_BYTES = 512;

function preparedKey(kid: string, key: Buffer): PreparedKey {
  const bound = Buffer.allocUnsafeSlow(BOUND_AAD_BYTES);
  return {
    key: createSecretKey(key),
    aad: Buffer.from(kid),
    bound,
    boundPrefix: bound.write(`${kid}\0`, 0, 'latin1'),
  };
}

/**
 * The AAD of `key`'s id and `bind` (`kid\0bind`), written after the key's kept `kid\0` and handed
 * as a view of those bytes: no string joined and no Buffer made of it a seal or an open (a bind's
 * AAD 3.3 k → 1.8 k instructions, a probe under callgrind; round 52 `runner-own`). The cipher takes
 * the bytes in `setAAD` itself (GCM authenticates them there, a copy kept by nobody), so they are
 * free again when it returns. A bind longer than the room (UTF-8: at most 3 bytes a UTF-16 unit) is
 * joined as before. `tail`: only `\0bind`, for a cipher made ahead that already took `kid`.
 */
function bindAad(kid: string, key: PreparedKey, bind: string, tail = false): Uint8Array {
  const at = key.boundPrefix;
  if (bind.length * 3 > BOUND_AAD_BYTES - at) return Buffer.from(tail ? `\0${bind}` : `${kid}\0${bind}`);
  const from = tail ? at - 1 : 0;
  const end = at + key.bound.write(bind, at, 'utf8');
  return new Uint8Array(key.bound.buffer, key.bound.byteOffset + from, end - from);
}

/**
 * How many ciphers a sealer keeps made for its next seals (`ready`). Making a cipher (its context,
 * the key's schedule, the IV, the AAD) is most of a seal when the code runs cold, as on a runner's
 * path from a program's end to the end's write, where two seals (result, text) wait for it
 * (test/bench/README.md, round 21): made beforehand, off that path, a seal only encrypts.
 */
export interface SealerOptions {
  keys: Record<string, Buffer>;
  activeKeyId: string;
  /**
   * Ciphers kept ready (default 0: each seal makes its own). Those a seal used are made again in
   * the next turn of the event loop's check phase, so the caller's own write goes first, also one
   * the caller itself put off to this turn's check phase (a turn batch's script call, undici's
   * write on a kept-alive socket). Each holds an IV of its own, drawn as a seal draws it and used
   * once.
   */
  ready?: number;
  /**
   * Restock only once the stock is below this many (default `ready`: every seal's cipher is made
   * again after its turn), then back up to `ready` in one go. A cipher made alone after the
   * caller's write runs cold, like the seal it is for (~30 µs of a gateway's CPU each, three a
   * submit); made a few dozen in a row they share warm code and caches, and the making runs once
   * every few submits instead of right behind each one's write (test/bench/README.md, round 32
   * `gw-seal`). The gap (`ready` minus this) is what a restock makes at least.
   */
  restockBelow?: number;
}

/** A cipher made before its seal: the IV it encrypts under (as text), and the AAD already given. */
interface ReadyCipher {
  iv: string;
  cipher: CipherGCM;
}

/** `update`'s bytes and `final`'s: GCM is a stream mode, `final` gives none, so no copy. */
const joined = (head: Buffer, tail: Buffer): Buffer =>
  tail.length === 0 ? head : Buffer.concat([head, tail]);

export function createSealer(options: SealerOptions): Sealer {
  const prepared = new Map<string, PreparedKey>();
  for (const [kid, key] of Object.entries(options.keys)) {
    if (!KID.test(kid)) throw new SealError(`seal key id "${kid}" must match ${KID}`);
    if (key.length !== 32) throw new SealError(`seal key "${kid}" must be 32 bytes, got ${key.length}`);
    prepared.set(kid, preparedKey(kid, key));
  }
  const active = prepared.get(options.activeKeyId);
  if (!active) throw new SealError(`active seal key "${options.activeKeyId}" is not among the keys`);
  const activeKid = options.activeKeyId;
  const ivs = ivSource();
  // An open's IV and tag, decoded here and copied by the decipher as it takes them.
  const opened = Buffer.alloc(IV_BYTES + TAG_BYTES);
  const openedIv = opened.subarray(0, IV_BYTES);
  const openedTag = opened.subarray(IV_BYTES);
  // `aad`: the key id's, or for a cipher made in its seal the key id's and the bind's in one piece.
  const made = (aad: Uint8Array): ReadyCipher => {
    const cipher = createCipheriv('aes-256-gcm', active.key, ivs.next());
    const iv = ivs.spent();
    // The key id is authenticated too, so a record cannot be relabelled to another key.
    cipher.setAAD(aad);
    return { iv, cipher };
  };
  const ready = Math.max(0, Math.floor(options.ready ?? 0));
  const restockBelow = Math.min(ready, Math.max(1, Math.floor(options.restockBelow ?? ready)));
  const stock: ReadyCipher[] = [];
  let restocking = false;
  const restock = () => {
    restocking = false;
    while (stock.length < ready) stock.push(made(active.aad));
  };
  restock();
  // Deferred, a failure must not escape as an uncaught exception: the next seal makes its own
  // cipher and meets it there, as a seal without a stock would.
  const restockLater = () => {
    try {
      restock();
    } catch {}
  };
  // Two hops: immediates run in the order they were queued, and a seal comes before the write it
  // is for, so one hop would make the ciphers in front of a write its caller queued after the seal
  // (a binding call's claim and complete: their script call waits for this turn's check phase).
  // The second hop is queued while this phase runs, so it waits for the next turn, while the caller
  // waits for its answer; it is ref'd, else the next turn's poll could block until an event comes
  // and the making would sit in front of that event's own deferred write.
  const restockAfterTurn = () => {
    setImmediate(restockLater);
  };
  return {
    seal(plaintext, bind) {
      // The bind is appended to the key id's AAD (GCM authenticates its AAD pieces as one string, so
      // a cipher made ahead takes it now, one made here both at once); the NUL keeps `kid` and `bind`
      // apart, as a key id has none.
      const kept = stock.pop();
      const { iv, cipher } = kept ?? made(bind === undefined ? active.aad : bindAad(activeKid, active, bind));
      if (kept && bind !== undefined) cipher.setAAD(bindAad(activeKid, active, bind, true));
      if (ready > 0 && stock.length < restockBelow && !restocking) {
        restocking = true;
        setImmediate(restockAfterTurn).unref();
      }
      const ct = joined(cipher.update(plaintext, 'utf8'), cipher.final());
      const tag = cipher.getAuthTag();
      return `v1.${activeKid}.${iv}.${encode16(tag, 0)}.${ct.toString('base64url')}`;
    },
    open(sealed, bind) {
      // `v1.<kid>.<iv>.<tag>.<ciphertext>`, read in place: no array of parts.
      const k = sealed.indexOf('.', 3);
      const i = k < 0 ? -1 : sealed.indexOf('.', k + 1);
      const t = i < 0 ? -1 : sealed.indexOf('.', i + 1);
      if (t < 0 || !sealed.startsWith('v1.') || sealed.indexOf('.', t + 1) >= 0) {
        throw new SealError('not a sealed value');
      }
      const kid = sealed.slice(3, k);
      const key = prepared.get(kid);
      if (!key) throw new SealError(`no seal key "${kid}" configured`);
      // The IV and the whole tag, as a seal writes them: a shorter tag (GCM would take one of 4 bytes
      // and up) or another IV length is refused, not tried.
      if (
        !decodeShort(sealed, k + 1, i, opened, 0, IV_BYTES) ||
        !decodeShort(sealed, i + 1, t, opened, IV_BYTES, TAG_BYTES)
      ) {
        throw new SealError(`sealed value failed authentication under key "${kid}"`);
      }
      const decipher = createDecipheriv('aes-256-gcm', key.key, openedIv);
      // One AAD of the key id and the bind: GCM authenticates its AAD pieces as one string.
      decipher.setAAD(bind === undefined ? key.aad : bindAad(kid, key, bind));
      decipher.setAuthTag(openedTag);
      try {
        // The ciphertext's text decoded by the decipher itself (the same base64url decoder as
        // `Buffer.from`'s, in C++): no Buffer of it made and dropped an open (round 50 `end-turn`).
        return joined(decipher.update(sealed.slice(t + 1), 'base64url'), decipher.final()).toString('utf8');
      } catch {
        throw new SealError(`sealed value failed authentication under key "${kid}"`);
      }
    },
  };
}

/** Parses `ISLET_SEAL_KEYS` (`kid:base64,kid2:base64`). */
export function parseSealKeys(text: string): Record<string, Buffer> {
  const keys: Record<string, Buffer> = {};
  for (const item of text.split(',').map((s) => s.trim())) {
    if (!item) continue;
    const at = item.indexOf(':');
    if (at <= 0) throw new SealError('ISLET_SEAL_KEYS entries must look like kid:base64');
    keys[item.slice(0, at)] = Buffer.from(item.slice(at + 1), 'base64');
  }
  if (Object.keys(keys).length === 0) throw new SealError('ISLET_SEAL_KEYS lists no key');
  return keys;
}

export function sealerFromConfig(
  config: {
    ISLET_SEAL_KEYS: string;
    ISLET_SEAL_ACTIVE_KEY_ID?: string;
  },
  options: Pick<SealerOptions, 'ready' | 'restockBelow'> = {},
): Sealer {
  const keys = parseSealKeys(config.ISLET_SEAL_KEYS);
  const activeKeyId = config.ISLET_SEAL_ACTIVE_KEY_ID ?? Object.keys(keys)[0]!;
  return createSealer({ keys, activeKeyId, ...options });
}

/** A fresh `kid:base64` entry, for dev stacks and tests. */
export function generateSealKey(kid = 'k1'): string {
  return `${kid}:${randomBytes(32).toString('base64')}`;
}
