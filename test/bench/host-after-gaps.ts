/**
 * The sandbox host's work after a run's `done` against the end's path, from hop-trace.ts's
 * `PERF=1 SCHED=1` trace (lines `tid time event args cpu=N`, the labels by thread id). Per traced run:
 * - host CPU in the end's window: the host's threads on a CPU between its `done` (its last write to
 *   stdout in the run) and the client's receipt;
 * - host CPU after the run: the same from `done` to the host's next read (the next run's program);
 * - the end's waits for a CPU: for each wake-up of the runner, Redis or the gateway in that window
 *   (seen from a traced waker), the time until the woken thread's own next event.
 * A thread is on a CPU from its first own event after it was switched out until the next switch
 * that takes it off (perf sees only the traced threads' own events and switches away from them).
 */
export interface TraceRun {
  sent: number;
  received: number;
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? Number.NaN;
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / (a.length || 1);

export function hostAfterGaps(lines: string[], runs: TraceRun[], label: Map<number, string>): string {
  type Ev = { tid: number; t: number; ev: string; args: string };
  const evs: Ev[] = [];
  for (const line of lines) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(.*)$/.exec(line);
    if (m) evs.push({ tid: Number(m[1]), t: Number(m[2]), ev: m[3]!, args: m[4]! });
  }
  const kind = (tid: number) => (label.get(tid) ?? '').split(':')[0] ?? '';
  // On-CPU intervals of every labelled thread.
  const onCpu = new Map<number, [number, number][]>();
  const since = new Map<number, number>();
  for (const e of evs) {
    if (!label.has(e.tid)) continue;
    if (e.ev === 'sched_switch' && new RegExp(`prev_pid=${e.tid} `).test(e.args)) {
      const from = since.get(e.tid);
      if (from !== undefined) {
        const list = onCpu.get(e.tid) ?? [];
        list.push([from, e.t]);
        onCpu.set(e.tid, list);
      }
      since.delete(e.tid);
    } else if (!since.has(e.tid)) since.set(e.tid, e.t);
  }
  const cpuOf = (who: string, a: number, b: number) => {
    let sum = 0;
    for (const [tid, list] of onCpu) {
      if (kind(tid) !== who) continue;
      for (const [x, y] of list) sum += Math.max(0, Math.min(y, b) - Math.max(x, a));
    }
    return sum;
  };
  const inWindow: number[] = [];
  const after: number[] = [];
  const waits: number[] = [];
  const hostWaitsOfEnd: number[] = [];
  for (const run of runs) {
    let done: Ev | undefined;
    for (const e of evs)
      if (e.t >= run.sent && e.t <= run.received && kind(e.tid) === 'host' && e.ev === 'sys_enter_write')
        if (/fd: 0x0+1,/.test(e.args)) done = e;
    if (!done) continue;
    const d = done;
    const nextRead = evs.find(
      (e) => e.t > run.received && kind(e.tid) === 'host' && e.ev === 'sys_exit_read' && e.tid === d.tid,
    );
    inWindow.push(cpuOf('host', d.t, run.received));
    if (nextRead) after.push(cpuOf('host', d.t, nextRead.t));
    let waited = 0;
    let waitedOnHostCpu = 0;
    for (const e of evs) {
      if (e.t < d.t || e.t > run.received || e.ev !== 'sched_wakeup') continue;
      const pid = Number(/ pid=(\d+)/.exec(e.args)?.[1]);
      const who = kind(pid);
      if (who !== 'runner' && who !== 'redis' && who !== 'gateway') continue;
      const own = evs.find((x) => x.t > e.t && x.tid === pid);
      if (!own) continue;
      waited += own.t - e.t;
      // …of which the host held a CPU
      waitedOnHostCpu += cpuOf('host', e.t, own.t) > 0 ? own.t - e.t : 0;
    }
    waits.push(waited);
    hostWaitsOfEnd.push(waitedOnHostCpu);
  }
  const fmt = (a: number[]) =>
    `${(median(a) * 1000).toFixed(3)} (${(mean(a) * 1000).toFixed(3)}) [${a.length}]`;
  return [
    'the host after `done`, ms p50 (mean) [runs]:',
    `  host CPU from done to the client's receipt  ${fmt(inWindow)}`,
    `  host CPU from done to its next run's read   ${fmt(after)}`,
    `  the end's wake-ups: waits for a CPU (sum)     ${fmt(waits)}`,
    `    of which while a host thread ran          ${fmt(hostWaitsOfEnd)}`,
  ].join('\n');
}
