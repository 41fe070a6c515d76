/**
 * The submit's side of the direct hand-off (`@islet/runs` handoff-scripts.ts): BullMQ's add of a
 * standard job runs in a script that, when a worker of the queue is registered idle, also runs that
 * worker's fused fetch (BullMQ's moveToActive-11 with the worker's token and lock, the look behind
 * the job, the run's lease and attempt start) and pushes the answer to the worker's blocking pop.
 * Only the add's call is replaced: BullMQ builds its keys and arguments and reads its answer as usual.
 */
import { LuaScript } from '@islet/core/lua-script';
import {
  type AdmissionRide,
  bakeFixedTerms,
  handOffAddScript,
  handOffFixedTerms,
  handOffKeys,
  luaLiteral,
} from '@islet/runs';
import type { Queue, RedisClient } from 'bullmq';
import { addStandardJob } from 'bullmq/dist/esm/scripts/addStandardJob-9.js';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';
import { HandedWatch, type Reclaimed } from './handoff-reclaim-store.ts';

const HAND_OFF_ADD = handOffAddScript(addStandardJob.content, moveToActive.content);
/** The same with the registration's liveness checked (`HandOffWatchOptions.liveCheck`, @islet/runs handoff-live.ts). */
const HAND_OFF_ADD_LIVE = handOffAddScript(addStandardJob.content, moveToActive.content, true);
/** The script's hash without a mode's names (tests count its calls). */
export const HAND_OFF_ADD_SHA = HAND_OFF_ADD.sha;

/** The hash of the add alone of `mode`'s queue (its names in its text; tests count its calls). */
export function handOffAddShaOf(mode: string, queueKeys: Record<string, string>, liveCheck = false): string {
  const add = liveCheck ? HAND_OFF_ADD_LIVE : HAND_OFF_ADD;
  return new LuaScript(bakeFixedTerms(add.source, handOffFixedTerms(queueKeys, mode), luaLiteral)).sha;
}
const ADD_COMMAND = 'addStandardJob';
const ADD_KEYS = addStandardJob.keys;

/** BullMQ's Scripts, private there: its calls go through `execCommand`. */
interface ExecScripts {
  execCommand(client: RedisClient, name: string, args: unknown[]): Promise<unknown>;
  version: string;
}

/** A queue's add (addStandardJob's keys and arguments, as to `execCommand`) carrying a submit's admission. */
export type RidingAdd = (ride: AdmissionRide, args: unknown[], dataTenant?: string) => Promise<unknown>;

const ridingAdds = new WeakMap<Queue, RidingAdd>();
const watches = new WeakMap<Queue, HandedWatch>();

/** The watch on `queue`'s hand-offs (handoff-reclaim-store.ts), where `handingAdds` made its adds hand off. */
export function handedWatchOf(queue: Queue): HandedWatch | undefined {
  return watches.get(queue);
}

/**
 * Where `handingAdds` watches its hand-offs: after `reclaimMs` (0: not watched), `onReclaimed` told.
 * `liveCheck` (ISLET_HANDOFF_LIVE_CHECK): the add hands a job only to a registration whose worker's
 * runner still holds its live channel (@islet/runs handoff-live.ts), so a runner killed while
 * registered takes none (on by default since round 47; off while runners older than 6b60376a, which
 * hold none, serve).
 */
export interface HandOffWatchOptions {
  reclaimMs?: number;
  onReclaimed?: (r: Reclaimed) => void;
  liveCheck?: boolean;
}

/**
 * The add of `queue` that carries a submit's admission in its own script (`@islet/runs`
 * admitted-add.ts), where `handingAdds` made its adds hand off; undefined elsewhere.
 */
export function ridingAddOf(queue: Queue): RidingAdd | undefined {
  return ridingAdds.get(queue);
}

/**
 * Makes `queue`'s standard adds hand their job to an idle worker (scripts of another BullMQ: as they
 * are). `mode`: the queue's sandbox mode, whose runners' compact registrations (`@islet/runs`
 * handoff-terms.ts) the adds then read, the names they leave out in the scripts' text; without
 * it, only the full form is read (a compact one is taken for unusable: the worker fetches the job).
 */
export function handingAdds(queue: Queue, mode?: string, watching: HandOffWatchOptions = {}): void {
  const scripts = (queue as unknown as { scripts?: ExecScripts }).scripts;
  if (!scripts || typeof scripts.execCommand !== 'function' || scripts.version !== version) return;
  const exec = scripts.execCommand.bind(scripts);
  const { idle, idleArgs } = handOffKeys(queue.keys[''] ?? '', '');
  const prioritized = queue.keys.prioritized ?? '';
  const fixed = mode === undefined ? undefined : handOffFixedTerms(queue.keys, mode);
  const add = watching.liveCheck ? HAND_OFF_ADD_LIVE : HAND_OFF_ADD;
  // The add alone (no admission riding: a resume's, the recovery's), the same names in its text.
  const own = fixed ? new LuaScript(bakeFixedTerms(add.source, fixed, luaLiteral)) : add;
  // The add's keys and the hand-off's three, one array while the add's keys stay the queue's (they
  // do: runAdds' are made once a queue), so the ride finds the script with these names in its text
  // (`@islet/runs` admitted-add.ts `bakedAddScript`) by the array (round 43 `submit-floor`).
  let keys: string[] = [];
  // A job handed to a worker that never takes it (killed while registered) is taken back after
  // `reclaimMs`, not left to BullMQ's stalled check (handoff-reclaim-store.ts); 0 turns the watch
  // off (the script's answer is still read apart).
  const watch =
    watching.reclaimMs === 0 ? undefined : new HandedWatch(queue, watching.reclaimMs, watching.onReclaimed);
  if (watch) watches.set(queue, watch);
  /** The add's answer for BullMQ: a hand-off's {answer, key, token} noted on the watch, its answer alone. */
  const read = (reply: unknown): unknown => {
    if (!Array.isArray(reply)) return reply;
    watch?.note(String(reply[1]), String(reply[2]));
    return reply[0];
  };
  ridingAdds.set(queue, (ride, args, dataTenant) => {
    let same = keys.length === ADD_KEYS + 3;
    for (let i = 0; same && i < ADD_KEYS; i++) same = keys[i] === args[i];
    if (!same) {
      // A slice grown in place: no spread's walk through the iterator protocol on a submit's path
      // (round 37 `submit-gw`).
      keys = args.slice(0, ADD_KEYS) as string[];
      keys.push(prioritized, idle, idleArgs);
    }
    return ride.send(add, keys, args.slice(ADD_KEYS) as (string | Buffer)[], fixed, dataTenant).then(read);
  });
  scripts.execCommand = (client, name, args) => {
    if (name !== ADD_COMMAND || args.length !== ADD_KEYS + 3) return exec(client, name, args);
    return own
      .run(
        client as unknown as Redis,
        [...(args.slice(0, ADD_KEYS) as string[]), prioritized, idle, idleArgs],
        args.slice(ADD_KEYS) as (string | number)[],
      )
      .then(read);
  };
}
