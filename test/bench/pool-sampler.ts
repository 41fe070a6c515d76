/**
 * Where a pool's slots go under the fair share, read from outside with no MONITOR (it would slow
 * Redis): the runner's counters and gauges from its `/metrics`, and every `everyMs` the runner's
 * busy slots, the pool's leases by where each one's job is, and the queue's waiting and delayed
 * jobs. `fair-probe.ts` and `bench:cluster`'s fair-share row (`fair-row.ts`) read the same samples.
 * One server only (the classifying script names keys of two slots).
 */
import { createRedis, keys } from '@islet/core';
import { metricsOf } from './cluster-figures.ts';

/** The sum of a metric's series in `/metrics` text (`re`'s first group is the value). */
export const metricSum = (text: string, re: RegExp) =>
  [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);

/** The runner's fair-share deferrals so far (every tenant and mode). */
export const deferralsOf = async (runnerUrl: string) =>
  metricSum(await metricsOf(runnerUrl), /^islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/gm);

/** The runner's busy slots (its gauge), from `/metrics` text. */
export const busySlotsIn = (text: string) =>
  metricSum(text, /^islet_runner_slots\{[^}]*state="busy"[^}]*\} (\d+)/gm);

// ARGV: pool busy key, queue prefix. The pool's leases by where their job is: taken by a worker
// (active), a reservation not promoted yet (delayed), promoted and not fetched (wait), elsewhere;
// then the active jobs holding no lease: with the share on, jobs a fetch refused that still hold a
// worker until they are moved to delayed (with the share off every active job).
const CLASSIFY = `
local out = {0, 0, 0, 0, 0}
local active = {}
local leased = {}
for _, id in ipairs(redis.call('LRANGE', ARGV[2] .. 'active', 0, -1)) do active[id] = true end
local waiting = {}
for _, id in ipairs(redis.call('LRANGE', ARGV[2] .. 'wait', 0, -1)) do waiting[id] = true end
for _, id in ipairs(redis.call('ZRANGE', ARGV[1], 0, -1)) do
  leased[id] = true
  if active[id] then out[1] = out[1] + 1
  elseif redis.call('ZSCORE', ARGV[2] .. 'delayed', id) then out[2] = out[2] + 1
  elseif waiting[id] then out[3] = out[3] + 1
  else out[4] = out[4] + 1 end
end
for id in pairs(active) do if not leased[id] then out[5] = out[5] + 1 end end
return out`;

/** Sums of the samples taken under one tag; divide by `n` for the means (`poolMeans`). */
export interface PoolSamples {
  n: number;
  /** The runner's busy slots (its gauge). */
  busy: number;
  /** The pool's leases (`ZCARD` of its busy set, reservations included). */
  leases: number;
  /** The queue's waiting and delayed jobs. */
  wait: number;
  delayed: number;
  /** Leases whose job is active, a reservation still delayed, promoted but not fetched, elsewhere. */
  leaseActive: number;
  leaseDelayed: number;
  leaseWaiting: number;
  leaseOther: number;
  /** Active jobs without a lease (refused by the fetch, not moved to delayed yet, when the share is on). */
  activeUnleased: number;
  /** Slots idle while some run waits (queued or deferred): what a work-conserving share never has. */
  idleWithWaiting: number;
}

const empty = (): PoolSamples => ({
  n: 0,
  busy: 0,
  leases: 0,
  wait: 0,
  delayed: 0,
  leaseActive: 0,
  leaseDelayed: 0,
  leaseWaiting: 0,
  leaseOther: 0,
  activeUnleased: 0,
  idleWithWaiting: 0,
});

/** The means of a tag's samples (`n` stays the count; none taken: zeros). */
export function poolMeans(s: PoolSamples | undefined): PoolSamples {
  const out = empty();
  if (!s) return out;
  for (const k of Object.keys(s) as (keyof PoolSamples)[]) out[k] = k === 'n' ? s.n : s[k] / Math.max(1, s.n);
  return out;
}

/**
 * Samples the pool every `everyMs` into the current tag's sums (none while the tag is undefined);
 * `onPoll` runs after each sample (fair-probe counts host starts there). `stop()` ends the loop
 * and answers the sums by tag. The sampler's own commands and scrapes load the runner and Redis a
 * little on every side alike; its own connection keeps them off the measured clients'.
 */
export function samplePool(o: {
  redisUrl: string;
  runnerUrl: string;
  mode: string;
  slots: number;
  everyMs: number;
  onPoll?: () => void;
}): { tag(name: string | undefined): void; stop(): Promise<Map<string, PoolSamples>> } {
  const redis = createRedis(o.redisUrl);
  const prefix = `islet:{runs-${o.mode}}:`;
  const sums = new Map<string, PoolSamples>();
  let current: string | undefined;
  let on = true;
  const loop = (async () => {
    while (on) {
      const tag = current;
      if (tag !== undefined) {
        const [text, leases, wait, delayed, classes] = await Promise.all([
          metricsOf(o.runnerUrl),
          redis.zcard(keys.poolBusy(o.mode)),
          redis.llen(`${prefix}wait`),
          redis.zcard(`${prefix}delayed`),
          redis.eval(CLASSIFY, 0, keys.poolBusy(o.mode), prefix) as Promise<number[]>,
        ]);
        // A sample counts for the tag it began under: one that straddles a change of tag is dropped.
        if (tag === current) {
          const s = sums.get(tag) ?? empty();
          const busy = busySlotsIn(text);
          s.n++;
          s.busy += busy;
          s.leases += leases;
          s.wait += wait;
          s.delayed += delayed;
          s.leaseActive += classes[0] ?? 0;
          s.leaseDelayed += classes[1] ?? 0;
          s.leaseWaiting += classes[2] ?? 0;
          s.leaseOther += classes[3] ?? 0;
          s.activeUnleased += classes[4] ?? 0;
          s.idleWithWaiting += busy < o.slots && wait + delayed > 0 ? o.slots - busy : 0;
          sums.set(tag, s);
        }
      }
      o.onPoll?.();
      await new Promise((r) => setTimeout(r, o.everyMs));
    }
  })();
  return {
    tag: (name) => {
      current = name;
    },
    stop: async () => {
      on = false;
      await loop;
      redis.disconnect();
      return sums;
    },
  };
}

/** A tag's sample means in one line (fair-probe's and the fair-share row's counts). */
export function poolLine(means: PoolSamples, slots: number): string {
  const f = (v: number) => v.toFixed(2);
  const unleased =
    means.leases > 0
      ? `${f(means.activeUnleased)}`
      : `${f(means.activeUnleased)} (no leases: the share is off)`;
  return (
    `runner busy slots ${f(means.busy)} of ${slots}, pool leases ${f(means.leases)} (job running ${f(means.leaseActive)}, ` +
    `reserved still delayed ${f(means.leaseDelayed)}, promoted not fetched ${f(means.leaseWaiting)}, elsewhere ${f(means.leaseOther)}), ` +
    `active jobs without a lease (refused, not moved yet) ${unleased}, queue waiting ${f(means.wait)} delayed ${f(means.delayed)}, ` +
    `idle slots while runs wait ${f(means.idleWithWaiting)} (${means.n} samples)`
  );
}
