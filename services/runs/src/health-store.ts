/**
 * The health series behind `GET /v1/health` and the console's Health page (layout:
 * health-buckets.ts). Run ends count themselves into their tenant's hour hash through the end
 * script's pending list (run-index-scripts.ts FINISH_TENANT; folded before each read here); gauges (queue depth, runner slots busy and live, decisions
 * pending, runs in flight) are written here by the gateway's sampler, one gateway per bucket, for
 * the cluster and for each tenant with something to show (an idle tenant writes nothing).
 * A tenant's series is its own hash; the cluster's counters are the sum of every tenant's.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import {
  addHealthCounter,
  HEALTH_BUCKET_MS,
  HEALTH_TTL_SECONDS,
  healthBucket,
  healthField,
  healthHour,
  quantileMs,
} from './health-buckets.ts';
import { foldPendingEnds } from './run-index.ts';

const STATUSES = ['Completed', 'Failed', 'Cancelled'] as const;

/** What a tenant holds right now, as the sampler reads it. */
interface TenantGauges {
  /** Runs and skills not yet ended. */
  inFlight: number;
  /** Runner slots the tenant's runs and skills hold, per mode (fair-share leases). */
  busy: Record<string, number>;
}

/** Series over the window, one value per bucket; a gauge is null where no gateway sampled. */
interface HealthSeries {
  bucketMs: number;
  from: number;
  to: number;
  /** Each bucket's start, ms. */
  t: number[];
  runs: Record<(typeof STATUSES)[number], number[]>;
  runsPerSecond: number[];
  p50Ms: Array<number | null>;
  p99Ms: Array<number | null>;
  failures: Record<string, number[]>;
  /** Per mode (cluster: waiting, prioritized and delayed jobs); a tenant's `any`: its runs in flight holding no slot. */
  queueDepth: Record<string, Array<number | null>>;
  slotsBusy: Record<string, Array<number | null>>;
  /** Live runner slots per mode (cluster only). */
  slotsTotal: Record<string, Array<number | null>>;
  decisionsPending: Array<number | null>;
  totals: {
    runs: Record<string, number>;
    failures: Record<string, number>;
    p50Ms: number | null;
    p99Ms: number | null;
  };
}

/** The hours a window [from, to] touches. */
function hoursOf(from: number, to: number): number[] {
  const out: number[] = [];
  for (let h = healthHour(from); h <= healthHour(to); h++) out.push(h);
  return out;
}

/** Adds a hash's `<bucket>|<name>` fields into per-bucket maps, within [first, last]. */
function addInto(
  into: Map<number, Map<string, number>>,
  hash: Record<string, string>,
  first: number,
  last: number,
) {
  for (const [field, raw] of Object.entries(hash)) {
    const cut = field.indexOf('|');
    const bucket = Number(field.slice(0, cut));
    if (!(bucket >= first && bucket <= last)) continue;
    const name = field.slice(cut + 1);
    const m = into.get(bucket) ?? new Map<string, number>();
    into.set(bucket, m);
    // Gauges are readings, not counts: a tenant's and the cluster's are never summed together.
    m.set(name, name.startsWith('g:') ? Number(raw) : (m.get(name) ?? 0) + Number(raw));
  }
}

export function createHealthStore(redis: Redis) {
  return {
    /** True for the one caller (of every gateway replica) that samples this bucket. */
    async lead(bucket: number): Promise<boolean> {
      const taken = await redis.set(keys.healthSampleLock(bucket), '1', 'PX', HEALTH_BUCKET_MS * 2, 'NX');
      return taken === 'OK';
    },

    /** Live runner slots per mode: each runner's registered slots whose registration has not lapsed. */
    async poolSlots(modes: readonly string[], now = Date.now()): Promise<Record<string, number>> {
      const rows = await Promise.all(modes.map((m) => redis.hgetall(keys.poolSlots(m))));
      const out: Record<string, number> = {};
      modes.forEach((mode, i) => {
        let n = 0;
        // `<slots>:<expiry ms>` per runner instance (the runner's fair-share.ts registers it).
        for (const v of Object.values(rows[i] ?? {})) {
          const [slots, expiry] = v.split(':').map(Number);
          if (slots !== undefined && expiry !== undefined && expiry > now) n += slots;
        }
        out[mode] = n;
      });
      return out;
    },

    /**
     * Slots held now per mode, from the fair share's leases (a parked run gave its lease back, so
     * it is not counted). Only meaningful while the runners take leases (`fairShareOn`).
     */
    async leasedSlots(modes: readonly string[], now = Date.now()): Promise<Record<string, number>> {
      const counts = await Promise.all(modes.map((m) => redis.zcount(keys.poolBusy(m), now, '+inf')));
      return Object.fromEntries(modes.map((m, i) => [m, counts[i] ?? 0]));
    },

    /** A tenant's runs in flight and the runner slots they hold, now. */
    async tenantGauges(tenant: string, modes: readonly string[], now = Date.now()): Promise<TenantGauges> {
      const [runs, skills, ...leases] = await Promise.all([
        redis.zcard(keys.inFlight(tenant)),
        redis.zcount(keys.skillsInFlight(tenant), now, '+inf'),
        ...modes.map((m) => redis.zcount(keys.poolTenantLeases(m, tenant), now, '+inf')),
      ]);
      return {
        inFlight: runs + skills,
        busy: Object.fromEntries(modes.map((m, i) => [m, leases[i] ?? 0])),
      };
    },

    /** Writes gauges (`name` → value, stored as `g:<name>`) into a bucket: a tenant's, or the cluster's (null). */
    async recordGauges(tenant: string | null, at: number, gauges: Record<string, number>) {
      const key =
        tenant === null ? keys.clusterHealthHour(healthHour(at)) : keys.healthHour(tenant, healthHour(at));
      const bucket = healthBucket(at);
      const fields = Object.entries(gauges).flatMap(([name, v]) => [
        healthField(bucket, `g:${name}`),
        String(v),
      ]);
      if (fields.length === 0) return;
      await redis
        .multi()
        .hset(key, ...fields)
        .expire(key, HEALTH_TTL_SECONDS)
        .exec();
    },

    /**
     * The series of [from, to]: one tenant's, or the cluster's when `tenants` lists every tenant
     * (their counters summed, the cluster's gauges).
     */
    async series(
      scope: { tenant: string } | { cluster: string[] },
      from: number,
      to: number,
    ): Promise<HealthSeries> {
      const first = healthBucket(from);
      const last = healthBucket(to);
      const hours = hoursOf(from, to);
      const counters = new Map<number, Map<string, number>>();
      const gauges = new Map<number, Map<string, number>>();
      const sampled = new Set<number>();
      const clusterHashes = await Promise.all(hours.map((h) => redis.hgetall(keys.clusterHealthHour(h))));
      const cluster = new Map<number, Map<string, number>>();
      for (const hash of clusterHashes) addInto(cluster, hash, first, last);
      for (const [bucket, m] of cluster) if (m.has('g:decisions')) sampled.add(bucket);
      const tenants = 'tenant' in scope ? [scope.tenant] : scope.cluster;
      // Ends waiting in a tenant's pending list are counted first (run-index.ts).
      await Promise.all(tenants.map((tenant) => foldPendingEnds(redis, tenant)));
      const hashes = await Promise.all(
        tenants.flatMap((tenant) => hours.map((h) => redis.hgetall(keys.healthHour(tenant, h)))),
      );
      for (const hash of hashes) {
        const own = new Map<number, Map<string, number>>();
        addInto(own, hash, first, last);
        for (const [bucket, m] of own) {
          const c = counters.get(bucket) ?? new Map<string, number>();
          counters.set(bucket, c);
          for (const [name, v] of m) if (!name.startsWith('g:')) addHealthCounter(c, name, v);
          if ('tenant' in scope) gauges.set(bucket, new Map([...m].filter(([n]) => n.startsWith('g:'))));
        }
      }
      if ('cluster' in scope) for (const [bucket, m] of cluster) gauges.set(bucket, m);

      const t: number[] = [];
      for (let b = first; b <= last; b++) t.push(b * HEALTH_BUCKET_MS);
      const modes = new Set<string>();
      const kinds = new Set<string>();
      for (const m of [...counters.values(), ...gauges.values()])
        for (const name of m.keys()) {
          if (name.startsWith('k:')) kinds.add(name.slice(2));
          const g = /^g:(?:queue|busy|slots):(.+)$/.exec(name);
          if (g) modes.add(g[1]!);
        }
      const series: HealthSeries = {
        bucketMs: HEALTH_BUCKET_MS,
        from: first * HEALTH_BUCKET_MS,
        to: (last + 1) * HEALTH_BUCKET_MS,
        t,
        runs: { Completed: [], Failed: [], Cancelled: [] },
        runsPerSecond: [],
        p50Ms: [],
        p99Ms: [],
        failures: Object.fromEntries([...kinds].sort().map((k) => [k, [] as number[]])),
        queueDepth: {},
        slotsBusy: {},
        slotsTotal: {},
        decisionsPending: [],
        totals: { runs: {}, failures: {}, p50Ms: null, p99Ms: null },
      };
      const sortedModes = [...modes].sort();
      if ('tenant' in scope) series.queueDepth.any = [];
      for (const mode of sortedModes) {
        series.slotsBusy[mode] = [];
        if ('cluster' in scope) {
          series.queueDepth[mode] = [];
          series.slotsTotal[mode] = [];
        }
      }
      const whole = new Map<number, number>();
      for (let b = first; b <= last; b++) {
        const c = counters.get(b) ?? new Map<string, number>();
        const g = gauges.get(b) ?? new Map<string, number>();
        let ended = 0;
        for (const s of STATUSES) {
          const n = c.get(`n:${s}`) ?? 0;
          series.runs[s].push(n);
          ended += n;
          if (n) series.totals.runs[s] = (series.totals.runs[s] ?? 0) + n;
        }
        series.runsPerSecond.push(ended / (HEALTH_BUCKET_MS / 1000));
        for (const kind of kinds) {
          const n = c.get(`k:${kind}`) ?? 0;
          series.failures[kind]!.push(n);
          if (n) series.totals.failures[kind] = (series.totals.failures[kind] ?? 0) + n;
        }
        const histogram = new Map<number, number>();
        for (const [name, n] of c)
          if (name.startsWith('d:')) {
            const bin = Number(name.slice(2));
            histogram.set(bin, n);
            whole.set(bin, (whole.get(bin) ?? 0) + n);
          }
        series.p50Ms.push(quantileMs(histogram, 0.5));
        series.p99Ms.push(quantileMs(histogram, 0.99));
        const on = sampled.has(b);
        const gauge = (name: string) => (on ? (g.get(`g:${name}`) ?? 0) : null);
        series.decisionsPending.push(gauge('decisions'));
        let busyAll = 0;
        for (const mode of sortedModes) {
          const busy = gauge(`busy:${mode}`);
          busyAll += busy ?? 0;
          series.slotsBusy[mode]!.push(busy);
          if ('cluster' in scope) {
            series.queueDepth[mode]!.push(gauge(`queue:${mode}`));
            series.slotsTotal[mode]!.push(gauge(`slots:${mode}`));
          }
        }
        if ('tenant' in scope) {
          const inFlight = gauge('inflight');
          series.queueDepth.any!.push(inFlight === null ? null : Math.max(0, inFlight - busyAll));
        }
      }
      series.totals.p50Ms = quantileMs(whole, 0.5);
      series.totals.p99Ms = quantileMs(whole, 0.99);
      return series;
    },
  };
}

export type HealthStore = ReturnType<typeof createHealthStore>;
