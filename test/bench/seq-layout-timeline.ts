/**
 * seq-layout.ts's timeline of one hop: every scheduler event on the box's CPUs and every syscall of
 * the path's main threads, µs from the hop's start, with the hop's segments above it.
 */
import type { Ev } from './seq-layout-states.ts';

export interface TimelineInput {
  evs: Ev[];
  /** The index of the first event at or after a time. */
  idx: (t: number) => number;
  mainKind: Map<number, string>;
  label: Map<number, string>;
  size: (e: Ev) => number;
}

export function timeline(
  ctx: TimelineInput,
  segs: { name: string; x: number; y: number }[],
  run: number,
  total: number,
  hop: string,
): string {
  const { evs, idx, mainKind, label, size } = ctx;
  const us = (v: number) => (v * 1e6).toFixed(0);
  const x = segs[0]!.x;
  const y = x + total;
  const lines = [
    `  -- ${hop} timeline, run ${run}: ${us(total)} µs (µs from the hop's start; main threads, and who takes a CPU)`,
  ];
  for (const g of segs)
    lines.push(`     [${us(g.x - x).padStart(5)} → ${us(g.y - x).padStart(5)}] ${g.name}`);
  for (let j = idx(x - 50e-6); j < evs.length && evs[j]!.t <= y; j++) {
    const e = evs[j]!;
    const at = `${((e.t - x) * 1e6).toFixed(0).padStart(6)} cpu${e.cpu}`;
    if (e.ev === 'sched_switch') {
      const m = /prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/.exec(e.args);
      if (!m) continue;
      const p = Number(m[1]);
      const n = Number(m[4]);
      const name = (tid: number, comm: string) =>
        mainKind.get(tid) ?? (tid === 0 ? 'idle' : label.has(tid) ? label.get(tid)! : `other(${comm})`);
      const pk = name(p, /prev_comm=(.*?) prev_pid/.exec(e.args)?.[1] ?? '');
      const nk = name(n, m[3]!);
      lines.push(`     ${at}  switch ${pk}${p === 0 ? '' : `(${m[2]})`} → ${nk}`);
    } else if (e.ev === 'sched_waking' || e.ev === 'sched_wakeup') {
      const tid = Number(/pid=(\d+)/.exec(e.args)?.[1]);
      if (!mainKind.has(tid)) continue;
      const target = /target_cpu=(\d+)/.exec(e.args)?.[1];
      lines.push(`     ${at}  ${e.ev.slice(6)} ${mainKind.get(tid)} → cpu${Number(target)}`);
    } else if (mainKind.has(e.tid) && e.ev !== 'sys_enter_read') {
      const s = size(e);
      const what = e.ev.replace(/^sys_/, '');
      // A read's descriptor is on its enter record, the thread's last one.
      let fd = /fd: (0x[0-9a-f]+)/.exec(e.args)?.[1];
      if (e.ev === 'sys_exit_read')
        for (let k = j - 1; k >= 0 && evs[k]!.t > e.t - 0.01; k--)
          if (evs[k]!.tid === e.tid && evs[k]!.ev === 'sys_enter_read') {
            fd = /fd: (0x[0-9a-f]+)/.exec(evs[k]!.args)?.[1];
            break;
          }
      lines.push(
        `     ${at}  ${mainKind.get(e.tid)} ${what}${fd ? ` fd ${Number.parseInt(fd, 16)}` : ''}${Number.isFinite(s) ? ` ${e.ev.includes('epoll') && e.ev.startsWith('sys_enter') ? '' : s}` : ''}`,
      );
    }
  }
  return lines.join('\n');
}
