/**
 * seq-layout.ts's scheduler states: a `perf script`'s events parsed and sorted, each main thread's
 * spans (on a CPU, waiting for one after a wake-up or a preemption, asleep), every thread's stretches
 * on a CPU, and Redis's fdatasyncs.
 */
import type { Meta } from './seq-layout-read.ts';

export interface Ev {
  tid: number;
  cpu: number;
  t: number;
  ev: string;
  args: string;
}
export type Cls = 'cpu' | 'wake-idle' | 'wake-busy' | 'preempt' | 'sleep' | 'fsync';
export const CLASSES: Cls[] = ['fsync', 'wake-idle', 'wake-busy', 'cpu', 'preempt', 'sleep'];
export interface Span {
  from: number;
  to: number;
  cls: Cls;
  /** A wait's: the CPU the thread then ran on (whose holder kept it waiting). */
  cpu?: number;
}

export function statesOf(text: string, meta: Meta) {
  const evs: Ev[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(?:syscalls|sched):(\w+):?\s*(.*)$/.exec(line);
    if (m) evs.push({ tid: Number(m[1]), cpu: Number(m[2]), t: Number(m[3]), ev: m[4]!, args: m[5]! });
  }
  evs.sort((a, b) => a.t - b.t);
  const label = new Map(meta.label);
  const { mains } = meta;
  const mainKind = new Map<number, string>(Object.entries(mains).map(([k, v]) => [v, k]));
  const kindOf = (tid: number) => (tid === 0 ? 'idle' : (label.get(tid)?.split(':')[0] ?? 'other'));
  // For blame: ours by kind, the box's other tenants by command name.
  const whoOf = (tid: number) =>
    tid === 0 ? 'idle' : (label.get(tid)?.split(':')[0] ?? `other:${comms.get(tid) ?? tid}`);

  // Each main thread's state through the trace; every thread's stretches on a CPU.
  const spans = new Map<number, Span[]>([...mainKind.keys()].map((t) => [t, []]));
  const open = new Map<number, { since: number; cls: Cls | 'wake' }>();
  const running = new Map<number, { tid: number; from: number }>();
  const onCpu: { tid: number; cpu: number; from: number; to: number }[] = [];
  const close = (tid: number, t: number, next: Cls | 'wake') => {
    const o = open.get(tid);
    if (o && o.cls !== 'wake') spans.get(tid)!.push({ from: o.since, to: t, cls: o.cls });
    else if (o) spans.get(tid)!.push({ from: o.since, to: t, cls: 'wake-busy' });
    open.set(tid, { since: t, cls: next });
  };
  const wakeTarget = new Map<number, Cls>();
  const comms = new Map<number, string>();
  for (const e of evs) {
    if (e.ev === 'sched_switch') {
      const m = /prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/.exec(
        e.args,
      );
      if (!m) continue;
      const prev = Number(m[2]);
      const next = Number(m[5]);
      comms.set(prev, m[1]!);
      comms.set(next, m[4]!);
      const was = running.get(e.cpu);
      if (was) onCpu.push({ tid: was.tid, cpu: e.cpu, from: was.from, to: e.t });
      running.set(e.cpu, { tid: next, from: e.t });
      if (spans.has(prev)) close(prev, e.t, m[3]!.startsWith('R') ? 'preempt' : 'sleep');
      if (spans.has(next)) {
        const o = open.get(next);
        if (o?.cls === 'wake') {
          spans
            .get(next)!
            .push({ from: o.since, to: e.t, cls: wakeTarget.get(next) ?? 'wake-busy', cpu: e.cpu });
          open.set(next, { since: e.t, cls: 'cpu' });
        } else {
          close(next, e.t, 'cpu');
          const last = spans.get(next)!.at(-1);
          if (last?.cls === 'preempt') last.cpu = e.cpu;
        }
      }
    } else if (e.ev === 'sched_waking' || e.ev === 'sched_wakeup') {
      const tid = Number(/pid=(\d+)/.exec(e.args)?.[1]);
      if (!spans.has(tid)) continue;
      const o = open.get(tid);
      if (e.ev === 'sched_waking' && o?.cls === 'sleep') {
        close(tid, e.t, 'wake');
        // The CPU it last ran on, until sched_wakeup names the one it is woken onto.
        const last = Number(/target_cpu=(\d+)/.exec(e.args)?.[1] ?? e.cpu);
        wakeTarget.set(tid, (running.get(last)?.tid ?? 0) === 0 ? 'wake-idle' : 'wake-busy');
      } else if (e.ev === 'sched_wakeup' && o?.cls === 'wake') {
        const target = Number(/target_cpu=(\d+)/.exec(e.args)?.[1] ?? e.cpu);
        wakeTarget.set(tid, (running.get(target)?.tid ?? 0) === 0 ? 'wake-idle' : 'wake-busy');
      }
    }
  }
  const fsyncs: [number, number][] = [];
  let fsOpen = Number.NaN;
  for (const e of evs) {
    if (e.tid !== mains.redis) continue;
    if (e.ev === 'sys_enter_fdatasync') fsOpen = e.t;
    else if (e.ev === 'sys_exit_fdatasync' && Number.isFinite(fsOpen)) {
      fsyncs.push([fsOpen, e.t]);
      fsOpen = Number.NaN;
    }
  }
  return { evs, label, mains, mainKind, kindOf, whoOf, spans, onCpu, fsyncs };
}
