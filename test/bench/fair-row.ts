/**
 * `bench:cluster`'s fair-share row (issue 33: "a lone tenant's throughput vs two tenants' together
 * (same stack)", goal lone ÷ two ≥ 0.85×; a share that wastes nothing reads ≈ 1×). One pool of
 * clients that never stops: each segment the clients switch between the lone tenant and two tenants
 * (every request alternating, 8 clients' worth each), in ABBA then BAAB cycles, so both sides
 * share the same minutes of a loaded machine and a drift of its load weighs on both alike; a
 * segment's window opens once every client runs that segment's side (the runs of the side before
 * are not counted) and closes at its end (runs still in flight are not counted either). Beside
 * the rates, what explains them per side: the runner's deferrals a run, CPU a run, and the pool's
 * samples (`pool-sampler.ts`).
 */
import { type PoolSamples, poolMeans } from './pool-sampler.ts';

export interface FairSide {
  /** Runs ended inside the side's windows, and the windows' seconds. */
  runs: number;
  seconds: number;
  perSec: number;
  deferralsPerRun: number;
  /** CPU ms a run of the cluster's processes, by kind and `total` (the sampler's share included). */
  cpuMsPerRun: Record<string, number>;
  /** The pool's sample means over the side's windows. */
  pool: PoolSamples;
}

/** A counted window: its side, runs ended inside it, and when it opened and closed (`performance.now()`). */
export interface FairWindow {
  side: Side;
  runs: number;
  openAt: number;
  closeAt: number;
}

export interface FairRow {
  lone: FairSide;
  two: FairSide;
  /** Each cycle's (ABBA or BAAB) rates, runs/s: the row's spread inside one run. */
  cycles: { lonePerSec: number; twoPerSec: number }[];
  windows: FairWindow[];
  segmentSeconds: number;
  segmentsPerSide: number;
  sampleMs: number;
  /** The row's whole wall time, s: windows, switches and counter reads. */
  wallSeconds: number;
}

export type Side = 'lone' | 'two';

export async function fairRow(o: {
  /** One run of the lone tenant, and one of the second tenant. */
  lone: () => Promise<void>;
  other: () => Promise<void>;
  clients: number;
  /** Even: whole cycles, two segments of each side a cycle. */
  segmentsPerSide: number;
  segmentSeconds: number;
  /** The runner's fair-share deferrals so far (`deferralsOf`). */
  deferrals: () => Promise<number>;
  /** CPU ms so far of the cluster's processes by kind (`cpuMsOfDescendants`). */
  cpu: () => Record<string, number>;
  /** The pool's samples, tagged with the side whose window is open (`samplePool`). */
  sampler: { tag(side: Side | undefined): void; stop(): Promise<Map<string, PoolSamples>> };
  sampleMs: number;
}): Promise<FairRow> {
  const began = performance.now();
  const cycles = Math.max(1, Math.round(o.segmentsPerSide / 2));
  const order: Side[] = [];
  for (let c = 0; c < cycles; c++)
    order.push(...((c % 2 ? ['two', 'lone', 'lone', 'two'] : ['lone', 'two', 'two', 'lone']) as Side[]));
  interface Segment {
    side: Side;
    switched: number;
    allSwitched: () => void;
    open: Promise<void>;
    openAt?: number;
    closeAt?: number;
    runs: number;
  }
  const segment = (side: Side): Segment => {
    let allSwitched = () => {};
    const open = new Promise<void>((r) => {
      allSwitched = r;
    });
    return { side, switched: 0, allSwitched, open, runs: 0 };
  };
  const segments = order.map(segment);
  let current = 0;
  let done = false;
  let turn = 0;
  const clients = Promise.all(
    Array.from({ length: o.clients }, async () => {
      let mine = -1;
      while (!done) {
        const s = segments[current]!;
        if (mine !== current) {
          mine = current;
          if (++s.switched === o.clients) s.allSwitched();
        }
        await (s.side === 'lone' || turn++ % 2 === 0 ? o.lone() : o.other());
        const t = performance.now();
        if (s.openAt !== undefined && s.closeAt === undefined && t >= s.openAt) s.runs++;
      }
    }),
  );
  // A client's failed run ends the row at once instead of leaving a window that never opens.
  const failed = clients.then(() => new Promise<never>(() => {}));
  failed.catch(() => {}); // read by the races below and by `await clients`
  const sampler = o.sampler;
  const sums: Record<Side, { deferrals: number; cpu: Record<string, number> }> = {
    lone: { deferrals: 0, cpu: {} },
    two: { deferrals: 0, cpu: {} },
  };
  let samples = new Map<string, PoolSamples>();
  try {
    for (let i = 0; i < segments.length; i++) {
      current = i;
      const s = segments[i]!;
      await Promise.race([s.open, failed]);
      const deferred = await o.deferrals();
      const cpu = o.cpu();
      s.openAt = performance.now();
      sampler.tag(s.side);
      await Promise.race([new Promise((r) => setTimeout(r, o.segmentSeconds * 1000)), failed]);
      s.closeAt = performance.now();
      sampler.tag(undefined);
      const cpuAfter = o.cpu();
      const sum = sums[s.side];
      sum.deferrals += (await o.deferrals()) - deferred;
      for (const [k, ms] of Object.entries(cpuAfter)) sum.cpu[k] = (sum.cpu[k] ?? 0) + ms - (cpu[k] ?? 0);
    }
  } finally {
    done = true;
    samples = await sampler.stop();
    await clients;
  }
  const windowsOf = (side: Side, from = 0, to = segments.length) => {
    const mine = segments.slice(from, to).filter((s) => s.side === side);
    const runs = mine.reduce((n, s) => n + s.runs, 0);
    const seconds = mine.reduce((n, s) => n + ((s.closeAt ?? 0) - (s.openAt ?? 0)) / 1000, 0);
    return { runs, seconds, perSec: runs / seconds };
  };
  const sideOf = (side: Side): FairSide => {
    const w = windowsOf(side);
    const cpuMsPerRun: Record<string, number> = {};
    for (const [k, ms] of Object.entries(sums[side].cpu)) cpuMsPerRun[k] = ms / w.runs;
    cpuMsPerRun.total = Object.values(cpuMsPerRun).reduce((a, b) => a + b, 0);
    return {
      ...w,
      deferralsPerRun: sums[side].deferrals / w.runs,
      cpuMsPerRun,
      pool: poolMeans(samples.get(side)),
    };
  };
  return {
    lone: sideOf('lone'),
    two: sideOf('two'),
    cycles: Array.from({ length: cycles }, (_, c) => ({
      lonePerSec: windowsOf('lone', c * 4, c * 4 + 4).perSec,
      twoPerSec: windowsOf('two', c * 4, c * 4 + 4).perSec,
    })),
    windows: segments.map((s) => ({
      side: s.side,
      runs: s.runs,
      openAt: s.openAt ?? 0,
      closeAt: s.closeAt ?? 0,
    })),
    segmentSeconds: o.segmentSeconds,
    segmentsPerSide: cycles * 2,
    sampleMs: o.sampleMs,
    wallSeconds: (performance.now() - began) / 1000,
  };
}
