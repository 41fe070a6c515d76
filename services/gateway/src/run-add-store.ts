/**
 * A run's job added without BullMQ's `Queue.add`: the same call of its `addStandardJob` script
 * (through `Scripts.execCommand`, so the hand-off of handoff-add-store.ts applies alike) with the
 * same keys and byte-identical arguments but for the options' copy of the job's id (left out: see
 * `encodedOpts`), built here without the `Job` object, its JSON of unset
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
import { runOptionsPacker } from './packed-options.ts';

/** BullMQ's encoder of a job's options and its script arguments (its `scripts.js`). */
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

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

/**
 * The tenant of a run's format-2 job data (`{tenant, enqueuedAtMs}`, run-queue-store.ts), whose
 * JSON then decodes to that tenant with no runId and no skill: the script carrying the submit's
 * admission reads it as that where the tenant is the admitted one, not by `cjson.decode` at the
 * hand-off's start (@islet/runs `AdmissionRide.send`; test/bench/README.md round 51 `submit-lua`).
 * Undefined for any other data.
 */
function formatTwoTenant(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as { tenant?: unknown; enqueuedAtMs?: unknown };
  let n = 0;
  for (const _ in d) n++;
  return n === 2 && typeof d.tenant === 'string' && typeof d.enqueuedAtMs === 'number' ? d.tenant : undefined;
}

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
  // The queue's client once it is known: BullMQ's `queue.client` is a promise of the same client
  // for the connection's life, awaited on every submit until round 43 (an await and its microtask).
  let known: RedisClient | undefined;
  const packOptions = runOptionsPacker((opts) => {
    const { jobId: _id, ...stored } = opts as RunJobOptions;
    return packer.pack(Object.assign({ attempts: 0 }, stored));
  });
  /** The add's script's answer: the job's id, '' when the admission it carried refused. */
  const added = (result: unknown): string => {
    if (result === undefined) return '';
    if (typeof result === 'number' && result < 0)
      throw scripts.finishedErrors({ code: result, command: 'addJob' });
    return String(result);
  };
  /** The add on `client`: one promise (the script's answer read by a `then`), no async layer. */
  const direct = (
    client: RedisClient,
    name: string,
    data: unknown,
    opts: RunJobOptions,
    ride: AdmissionRide | undefined,
  ): Promise<string> => {
    // As the Job's constructor orders them: `attempts` first, then the add's options as given,
    // but for `jobId`: the job's id goes in the script's own arguments (`args[2]`), and the copy
    // BullMQ keeps in the stored options is read by nothing (BullMQ reads it on the adding side
    // only; a job's id is its key; our runner and scripts read `attempts` and `removeOnComplete`):
    // 47 bytes out of the submit's fsync'd write (test/bench/README.md, round 36, `aof-trim`).
    // Packed once per `attempts` while they are `runJobOptions`' own (packed-options.ts).
    const encodedOpts = packOptions(opts);
    const now = Date.now();
    const args = packer.pack([prefix, opts.jobId, name, now, null, null, undefined, undefined, null]);
    // `concat`, not a spread (a walk through the iterator protocol in unoptimized code; round 37).
    const addArgs: unknown[] = (keys as unknown[]).concat(
      args,
      JSON.stringify(data === undefined ? {} : data),
      encodedOpts,
    );
    const riding = ride && ridingAddOf(queue);
    if (ride && !riding) ride.alone();
    // The hand-off's add (riding) also takes the options as the JSON its own `cjson.encode` would
    // make of them (its direct add stores it: @islet/runs handed-add.ts), where they are the
    // source's own: ~18 K Redis instructions a submit (test/bench/README.md, round 47 `submit-lean`).
    // Only there: BullMQ's own call (execCommand) takes its three arguments. Given only for a run's
    // own options (`cjsonOf`), the text also tells that add that none of `de`, `lifo`, `delay`,
    // `priority` is set: it does not unpack the packed options at all (round 50 `submit-args`).
    const text = riding && packOptions.cjsonOf(encodedOpts);
    // With it, what `args` packs (the job's key, id, name, time: `Date.now()`'s whole ms, printed
    // as Redis prints the packed number), so that add does not unpack `args` either (still sent:
    // BullMQ's text, its duplicate path, reads it; round 51 `submit-lua`).
    return (
      riding
        ? riding(
            ride,
            text ? addArgs.concat(text, prefix + opts.jobId, opts.jobId, name, String(now)) : addArgs,
            formatTwoTenant(data),
          )
        : scripts.execCommand(client, 'addStandardJob', addArgs)
    ).then(added);
  };
  // Not `async`: the add's own promise, not one more that awaits it (round 44 `submit-peek`).
  return (name, data, opts, ride) => {
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
    if (known === undefined)
      return queue.client.then((client) => {
        known = client;
        return direct(client, name, data, opts, ride);
      });
    try {
      return direct(known, name, data, opts, ride);
    } catch (err) {
      // As from an async function: a rejection, never a throw.
      return Promise.reject(err);
    }
  };
}
