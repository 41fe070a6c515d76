/**
 * A hand-off registration's terms (handoff-scripts.ts `IdleTerms`) in their compact form: only
 * what differs between workers of a mode (the fixed-names id, the lock token, lock duration, name,
 * hand-off key, the lease's share, cap and length, the journal's expiry, the stream's length and
 * the sealed `Running` event), as one JSON array; the names every registration of a mode carries
 * alike (moveToActive-11's keys, BullMQ's prefix, the pool's keys, the run's, journal's and
 * stream's key parts, the start event's type, channel and wake-up text) are in the submit's
 * script text instead (admitted-add.ts `bakedAddScript`). The full form's `cjson.decode` made ~40
 * strings and 3 tables at every hand-off (58.3 k Redis instructions for 1,025 B; the compact
 * form's ~260 B 16.7 k: test/bench/README.md round 43 `submit-floor`, round 44 `handoff-terms`).
 *
 * The array's first element names the fixed names (`id`, a hash of them and of this layout): the
 * script reads a compact registration only when it holds the same names under the same id, and
 * takes any other for unusable (the registration dropped, the job left on the queue with its
 * marker set: the worker wakes and fetches it). A runner writes the compact form only when its own
 * terms hold exactly the names `handOffFixedTerms` derives (`compactTermsOf`), and only with
 * ISLET_HANDOFF_COMPACT_TERMS=on (the two-release rule: read since 9ec25e04, written by default
 * since the release after it).
 */
import { createHash } from 'node:crypto';
import { channels, keys } from '@islet/core';
import { FETCHED_ARGS, startArgsOf } from './fetched-start-args.ts';
import { journalKeys } from './keys.ts';

/** BullMQ's queue keys its fetch (moveToActive-11) takes, in its order. */
export const HAND_OFF_FETCH_KEYS = [
  'wait',
  'active',
  'prioritized',
  'events',
  'stalled',
  'limiter',
  'delayed',
  'paused',
  'meta',
  'pc',
  'marker',
] as const;

/** `startArgs` positions that are names (the pool's keys, key parts, the event's type, channel, wake-up). */
export const FIXED_START = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 19, 21, 22] as const;
/** `startArgs` positions a compact registration carries (share, cap, lease ms, journal ttl, stream length, sealed event). */
const CARRIED_START = [14, 15, 16, 17, 18, 20] as const;
/**
 * The journal's expiry (begin-attempt's TTL argument): unread by every hand-off since round 46
 * (6b60376a's and this release's begin-attempt.lua), so written empty; its place kept, as
 * 6b60376a's gateway reads the compact form by position under its id — a registration without the
 * element fails its submit (HTTP 500: the fetch's arguments shifted), one under another layout's id
 * is not handed (test/bench/ttl-drop-probe.ts; test/bench/README.md round 47 `live-check-on`).
 */
const UNREAD_START = 17;
/** The layout's name, hashed into the id: another layout is another id. */
const LAYOUT = 'islet-handoff-terms-2';

/** A mode's fixed names (`names[0]` the id, then the 11 fetch keys, the prefix, the 17 start names). */
export interface FixedTerms {
  id: string;
  names: readonly string[];
}

/** What a registration's full terms hold (handoff-scripts.ts `IdleTerms`, `startArgs` raw). */
interface FullTerms {
  keys: readonly string[];
  prefix: string;
  token: string;
  lockDuration: number;
  name: string;
  startArgs: readonly (string | number)[];
  handOff: string;
}

/** The fixed names of a registration's full terms, or undefined when they are not in this layout. */
function fixedNamesOf(t: Pick<FullTerms, 'keys' | 'prefix' | 'startArgs'>): string[] | undefined {
  if (t.keys.length !== HAND_OFF_FETCH_KEYS.length || t.startArgs.length !== FETCHED_ARGS) return undefined;
  const names = [...t.keys, t.prefix];
  for (const i of FIXED_START) names.push(String(t.startArgs[i]));
  return names;
}

function fixedOf(names: string[]): FixedTerms {
  const id = `h2:${createHash('sha1')
    .update(`${LAYOUT}\n${names.join('\n')}`)
    .digest('hex')
    .slice(0, 16)}`;
  return { id, names: [id, ...names] };
}

/**
 * The fixed names of `mode`'s registrations as this release's runner makes them (its queue's keys,
 * BullMQ's `keys`; the run store's default key layout): what the gateway bakes into its script.
 */
export function handOffFixedTerms(queueKeys: Record<string, string>, mode: string): FixedTerms {
  const start = startArgsOf({
    mode,
    share: 0,
    cap: 0,
    leaseMs: 0,
    ttlSeconds: 0,
    nowMs: 0,
    journalKey: journalKeys().journal,
    runKey: keys.run,
    // run-reads.ts `attemptStartEvent`: only its names are read here.
    start: (runId) => ({
      streamKey: keys.runEvents(runId),
      maxLen: 0,
      type: 'status',
      sealedData: '',
      channel: channels.runProgress,
      message: `${runId} running`,
    }),
  });
  const names = fixedNamesOf({
    keys: HAND_OFF_FETCH_KEYS.map((k) => queueKeys[k] ?? ''),
    prefix: queueKeys[''] ?? '',
    startArgs: start,
  });
  if (!names) throw new Error('hand-off terms: layout');
  return fixedOf(names);
}

/**
 * A registration's compact form's parts around its token (`[head, tail]`: the text is head + the
 * token as JSON + tail), or undefined when `terms`' fixed names are not `fixed`'s (the full form
 * is written then). Its start's time is not carried: the hand-off writes its own.
 */
export function compactTermsOf(
  fixed: FixedTerms,
  terms: Omit<FullTerms, 'token'>,
): [string, string] | undefined {
  const names = fixedNamesOf(terms);
  if (!names || names.length + 1 !== fixed.names.length) return undefined;
  for (let i = 0; i < names.length; i++) if (names[i] !== fixed.names[i + 1]) return undefined;
  const carried = CARRIED_START.map((i) =>
    i === UNREAD_START ? '""' : JSON.stringify(String(terms.startArgs[i])),
  );
  return [
    `[${JSON.stringify(fixed.id)},`,
    `,${JSON.stringify(terms.lockDuration)},${JSON.stringify(terms.name)},${JSON.stringify(terms.handOff)},${carried.join(',')}]`,
  ];
}

/** Where the hand-off's script takes fixed name `i` (0: the id): `nil` until baked (`bakeFixedTerms`). */
export const fixedMark = (i: number) => `(nil --[[islet:fixed-term:${i}]])`;

const F = fixedMark;
/** A compact registration's element `i` (1-based; its layout: id, token, lock ms, name, hand-off key, CARRIED_START's). */
const C = (i: number) => `terms[${i}]`;

/**
 * The hand-off's reading of a compact registration (an `elseif` of its terms' reading, in its
 * scope: `terms`, `nowText`, and the fetch's `token`, `fetchKeys`, `handOff`, `opts`, `FA`), the
 * fixed names as marks; `fetchArg` the fetch's packed options' expression. An unbaked script's
 * first mark is nil, so the branch is never taken there.
 */
export function compactTermsBranch(fetchArg: string): string {
  const fetchKeys = HAND_OFF_FETCH_KEYS.map((_, i) => F(1 + i)).join(', ');
  // FA as the full form's: the prefix, the time, the options, startArgs with the time last.
  const start: string[] = [];
  let fixedAt = 13;
  let carriedAt = 6;
  for (let i = 0; i < FETCHED_ARGS - 1; i++)
    start.push((FIXED_START as readonly number[]).includes(i) ? F(fixedAt++) : C(carriedAt++));
  return `elseif ok and ${F(0)} and terms[1] == ${F(0)} then
  token, handOff = ${C(2)}, ${C(5)}
  fetchKeys = {${fetchKeys}}
  opts = {token = token, lockDuration = tonumber(${C(3)})}
  if ${C(4)} ~= '' then opts.name = ${C(4)} end
  FA = {${F(12)}, nowText, ${fetchArg}, ${start.join(', ')}, nowText}`;
}

/** `source` with the fixed names' marks as Lua literals (every name printable ASCII without `'` or `\`). */
export function bakeFixedTerms(source: string, fixed: FixedTerms, literal: (s: string) => string): string {
  let out = source;
  fixed.names.forEach((name, i) => {
    out = out.split(fixedMark(i)).join(literal(name));
  });
  return out;
}

/**
 * A string as a Lua literal (every byte outside printable ASCII, `'` and `\` as a decimal escape of
 * three digits: Lua reads up to three, so a shorter one followed by a digit would be misread).
 */
export function luaLiteral(s: string): string {
  let out = "'";
  for (const b of Buffer.from(s, 'utf8')) {
    out +=
      b >= 0x20 && b < 0x7f && b !== 0x27 && b !== 0x5c
        ? String.fromCharCode(b)
        : `\\${String(b).padStart(3, '0')}`;
  }
  return `${out}'`;
}
