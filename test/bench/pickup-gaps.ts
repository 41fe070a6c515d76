/**
 * `hop-trace.ts PERF=1`'s pick-up hops: for each traced run, the stage `enqueue → runner pick-up`
 * message by message, each hop from the one before, on one clock (CLOCK_MONOTONIC: perf's
 * syscall stamps; the run's `enqueued` and `pickedUp` stamps, taken on the wall clock of
 * `performance`, moved onto it with the bench process's own offset between the two clocks).
 *
 *   enqueued (gateway JS: the add built) → the gateway's write to Redis → Redis reads it → Redis's
 *   AOF write → fsync starts → ends → Redis writes the hand-off (the write whose size the runner
 *   then reads) → the runner reads it → pickedUp (runner JS) → the program to the host
 *
 * and, between the gateway's write and Redis's read of it, whether Redis was elsewhere (its wake-ups
 * and fsyncs in between).
 */

export interface TracedRun {
  sent: number;
  received: number;
  /** The run's `timings.enqueued` and `timings.pickedUp`, already on the monotonic clock, s. */
  enqueued?: number;
  pickedUp?: number;
}

interface Ev {
  t: number;
  who: string;
  ev: string;
  size: number;
  /** `sched_wakeup` (SCHED=1): the kind of the process woken. */
  woken?: string;
}

const NAMES = [
  'enqueued → gateway writes to Redis',
  'gateway write → Redis reads it',
  'Redis read → AOF write (the scripts)',
  'AOF write → fsync starts',
  'fsync',
  'fsync → hand-off written to runner',
  'hand-off written → runner reads it',
  '  of which written → runner woken (SCHED=1)',
  '  of which woken → its epoll returns (on a CPU)',
  '  of which epoll returns → the read',
  'runner read → pickedUp (runner JS)',
  'pickedUp → program to host',
  'all: enqueued → pickedUp (the stage)',
  'all: gateway write → runner read',
  'Redis wake-ups between gateway write and its read',
  'Redis fsyncs between gateway write and its read',
  'Redis reads between gateway write and its read',
] as const;

export function pickupGaps(lines: string[], runs: TracedRun[], label: Map<number, string>): string {
  const events: Ev[] = lines.flatMap((line) => {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(.*)$/.exec(line);
    const who = m && (label.get(Number(m[1])) ?? '').split(':')[0];
    if (!m || !who) return [];
    const ev = m[3]!;
    const args = m[4]!;
    if (/^sys_exit_epoll/.test(ev) && /^0x0\b/.test(args)) return [];
    const size =
      ev === 'sys_exit_read'
        ? Number.parseInt(args, 16)
        : Number.parseInt(/count: (0x[0-9a-f]+)/.exec(args)?.[1] ?? 'NaN', 16);
    const pid = ev === 'sched_wakeup' ? /pid=(\d+)/.exec(args)?.[1] : undefined;
    const woken = pid === undefined ? undefined : (label.get(Number(pid)) ?? '').split(':')[0];
    return [{ t: Number(m[2]), who, ev, size, ...(woken ? { woken } : {}) }];
  });
  const gaps = new Map<string, number[]>(NAMES.map((n) => [n, []]));
  const isWrite = (e: Ev) => /^sys_enter_write/.test(e.ev);
  for (const run of runs) {
    if (run.enqueued === undefined || run.pickedUp === undefined) continue;
    const inRun = events.filter((e) => e.t >= run.sent && e.t <= run.received);
    const after = (from: number, ok: (e: Ev) => boolean) => {
      for (let i = from + 1; i < inRun.length; i++) if (ok(inRun[i]!)) return i;
      return -1;
    };
    // The gateway's first write to Redis after the add was built (the admission and the add in one writev).
    const enq = run.enqueued;
    const gwWrite = inRun.findIndex((e) => e.t >= enq && e.who === 'gateway' && isWrite(e));
    if (gwWrite < 0) continue;
    const redisRead = after(gwWrite, (e) => e.who === 'redis' && e.ev === 'sys_exit_read' && e.size > 1024);
    const aof = after(redisRead, (e) => e.who === 'redis' && isWrite(e));
    const fsync = after(aof, (e) => e.who === 'redis' && e.ev === 'sys_enter_fdatasync');
    const fsynced = after(fsync, (e) => e.who === 'redis' && e.ev === 'sys_exit_fdatasync');
    const runnerRead = after(fsynced, (e) => e.who === 'runner' && e.ev === 'sys_exit_read' && e.size > 1024);
    if ([redisRead, aof, fsync, fsynced, runnerRead].some((i) => i < 0)) continue;
    const handOff = after(
      fsynced,
      (e) => e.who === 'redis' && isWrite(e) && e.size === inRun[runnerRead]!.size,
    );
    const program = after(runnerRead, (e) => e.who === 'runner' && isWrite(e));
    if (handOff < 0 || program < 0) continue;
    const t = (i: number) => inRun[i]!.t;
    // The runner's wake-up by Redis's write, and its epoll's return before the read (NaN without SCHED=1).
    const woken = after(handOff, (e) => e.who === 'redis' && e.ev === 'sched_wakeup' && e.woken === 'runner');
    let epoll = -1;
    for (let i = runnerRead - 1; i > handOff && epoll < 0; i--)
      if (inRun[i]!.who === 'runner' && /^sys_exit_epoll/.test(inRun[i]!.ev)) epoll = i;
    const sched = woken >= 0 && woken < runnerRead && epoll > woken;
    const between = inRun.slice(gwWrite + 1, redisRead).filter((e) => e.who === 'redis');
    const hops = [
      t(gwWrite) - enq,
      t(redisRead) - t(gwWrite),
      t(aof) - t(redisRead),
      t(fsync) - t(aof),
      t(fsynced) - t(fsync),
      t(handOff) - t(fsynced),
      t(runnerRead) - t(handOff),
      sched ? t(woken) - t(handOff) : Number.NaN,
      sched ? t(epoll) - t(woken) : Number.NaN,
      sched ? t(runnerRead) - t(epoll) : Number.NaN,
      run.pickedUp - t(runnerRead),
      t(program) - run.pickedUp,
      run.pickedUp - enq,
      t(runnerRead) - t(gwWrite),
      between.filter((e) => /^sys_exit_epoll/.test(e.ev)).length / 1000,
      between.filter((e) => e.ev === 'sys_exit_fdatasync').length / 1000,
      between.filter((e) => e.ev === 'sys_exit_read').length / 1000,
    ];
    for (const [i, h] of hops.entries()) if (!Number.isNaN(h)) gaps.get(NAMES[i]!)!.push(h);
  }
  const fmt = (a: number[]) => {
    const s = [...a].sort((x, y) => x - y);
    const mean = a.reduce((x, y) => x + y, 0) / (a.length || 1);
    return `${((s[Math.floor(s.length / 2)] ?? Number.NaN) * 1000).toFixed(3)} (${(mean * 1000).toFixed(3)})`;
  };
  return `the pick-up's hops, ms p50 (mean) [runs] (the last three: counts a run):\n${[...gaps]
    .map(([k, a]) => `  ${k.padEnd(50)} ${fmt(a)} [${a.length}]`)
    .join('\n')}`;
}
