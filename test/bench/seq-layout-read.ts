/**
 * seq-layout.ts's reader: a `perf script` of the whole box's `sched_switch`/`sched_waking`/
 * `sched_wakeup` and our main threads' syscalls, and each run's hop stamps, laid out hop by hop
 * (the threads' states: seq-layout-states.ts; a hop's timeline: seq-layout-timeline.ts).
 * See seq-layout.ts for what is traced and how each segment's time is classed.
 */

import { CLASSES, type Cls, type Ev, statesOf } from './seq-layout-states.ts';
import { timeline } from './seq-layout-timeline.ts';

export interface Hop {
  enqueued: number;
  pickedUp: number;
  endSent: number;
  bytesAt: number;
}
export interface Meta {
  label: [number, string][];
  mains: { gateway: number; redis: number; runner: number; client: number };
  hops: Hop[];
}

const SHOW = Number(process.env.SHOW ?? 1);
const SHOW_SLOW = process.env.SHOW_SLOW === '1';
const MIN_PUSH_BYTES = Number(process.env.MIN_PUSH_BYTES ?? 200);

export function analyse(text: string, meta: Meta): string {
  const { evs, label, mains, mainKind, kindOf, whoOf, spans, onCpu, fsyncs } = statesOf(text, meta);
  const size = (e: Ev) =>
    e.ev.startsWith('sys_exit')
      ? Number.parseInt(e.args, 16)
      : Number.parseInt(/count: (0x[0-9a-f]+)/.exec(e.args)?.[1] ?? 'NaN', 16);
  const isWrite = (e: Ev) => e.ev === 'sys_enter_write' || e.ev === 'sys_enter_writev';
  // The first event at or after t (binary search), then forward to the first that matches.
  const idx = (t: number) => {
    let lo = 0;
    let hi = evs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (evs[mid]!.t < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const first = (from: number, to: number, ok: (e: Ev) => boolean) => {
    for (let j = idx(from); j < evs.length && evs[j]!.t <= to; j++) if (ok(evs[j]!)) return evs[j];
    return undefined;
  };
  const all = (from: number, to: number, ok: (e: Ev) => boolean) => {
    const out: Ev[] = [];
    for (let j = idx(from); j < evs.length && evs[j]!.t <= to; j++) if (ok(evs[j]!)) out.push(evs[j]!);
    return out;
  };
  const classify = (tid: number, x: number, y: number): Map<Cls, number> => {
    const out = new Map<Cls, number>(CLASSES.map((c) => [c, 0]));
    const inFsync = (a: number, b: number) =>
      tid !== mains.redis
        ? 0
        : fsyncs.reduce((s, [f, g]) => s + Math.max(0, Math.min(g, b) - Math.max(f, a)), 0);
    for (const s of spans.get(tid) ?? []) {
      const a = Math.max(s.from, x);
      const b = Math.min(s.to, y);
      if (b <= a) continue;
      // Asleep inside an fdatasync is the fsync; its completion's wake and the kernel's work in it
      // (on a CPU in D state) keep their own classes.
      const f = s.cls === 'sleep' ? inFsync(a, b) : 0;
      out.set('fsync', out.get('fsync')! + f);
      out.set(s.cls, out.get(s.cls)! + (b - a - f));
    }
    return out;
  };

  // Who held the CPU a segment's holder waited on (its wait spans: after a wake-up or a preemption).
  const blame = (tid: number, x: number, y: number, into: Map<string, number>) => {
    for (const s of spans.get(tid) ?? []) {
      if (s.cpu === undefined || s.cls === 'cpu' || s.cls === 'sleep') continue;
      const a = Math.max(s.from, x);
      const b = Math.min(s.to, y);
      if (b <= a) continue;
      for (const r of onCpu) {
        if (r.cpu !== s.cpu || r.to <= a || r.from >= b || r.tid === tid) continue;
        const k = whoOf(r.tid);
        into.set(k, (into.get(k) ?? 0) + Math.min(r.to, b) - Math.max(r.from, a));
      }
    }
  };
  const hopNames = {
    pickup: [
      'gateway: enqueued → its write',
      'redis: → fsync starts',
      'fsync',
      'redis: → hand-off written',
      'runner: → pickedUp',
    ],
    end: [
      'runner: endSent → its write',
      'redis: → fsync starts',
      'fsync',
      'redis: → push written',
      'gateway: → response written',
      'client: → first bytes',
    ],
  };
  type Row = {
    run: number;
    total: number;
    segs: {
      name: string;
      tid: number;
      x: number;
      y: number;
      cls: Map<Cls, number>;
      held: Map<string, number>;
    }[];
    fsyncsIn: number;
    sys: Map<string, number>;
    note: Map<string, number>;
  };
  const rows = { pickup: [] as Row[], end: [] as Row[] };
  const skipped = new Map<string, number>();
  const skip = (why: string) => skipped.set(why, (skipped.get(why) ?? 0) + 1);
  const sysCounts = (x: number, y: number) => {
    const m = new Map<string, number>();
    // An epoll wait's timeout is on its enter record: 0 is a poll (work pending), > 0 a wait that
    // a timer ends when no event comes first.
    const lastTimeout = new Map<number, number>();
    for (const e of all(x, y, (e) => mainKind.has(e.tid) && !e.ev.startsWith('sched'))) {
      const who = mainKind.get(e.tid)!;
      if (e.ev.startsWith('sys_enter_epoll'))
        lastTimeout.set(e.tid, Number.parseInt(/timeout: (0x[0-9a-f]+)/.exec(e.args)?.[1] ?? '-1', 16));
      let k = e.ev.replace(/^sys_(enter|exit)_/, '').replace(/^epoll_p?wait2?$/, 'epoll');
      if (e.ev === 'sys_enter_read') continue;
      if (e.ev.startsWith('sys_exit_epoll'))
        k =
          size(e) !== 0
            ? 'epoll→events'
            : lastTimeout.get(e.tid) === 0
              ? 'epoll→0 (a poll)'
              : 'epoll→0 (a timer)';
      else if (e.ev.startsWith('sys_enter_epoll')) k = 'epoll wait';
      else if (e.ev.startsWith('sys_enter_fdatasync')) k = 'fdatasync';
      else if (e.ev.startsWith('sys_exit_fdatasync')) continue;
      m.set(`${who} ${k}`, (m.get(`${who} ${k}`) ?? 0) + 1);
    }
    return m;
  };
  for (const [run, h] of meta.hops.entries()) {
    // The pick-up.
    const a = h.enqueued;
    const b = h.pickedUp;
    if (Number.isFinite(a) && Number.isFinite(b) && b > a) {
      const gw = first(a, b, (e) => e.tid === mains.gateway && isWrite(e));
      const fs = gw && fsyncs.find(([f]) => f > gw.t && f < b);
      const reads = fs
        ? all(fs[1], b, (e) => e.tid === mains.runner && e.ev === 'sys_exit_read' && size(e) > 0)
        : [];
      const rWrites = fs ? all(fs[1], b, (e) => e.tid === mains.redis && isWrite(e)) : [];
      let handoff: Ev | undefined;
      for (const r of reads) {
        handoff = rWrites.find((w) => w.t < r.t && size(w) === size(r));
        if (handoff) break;
      }
      handoff ??= rWrites[0];
      if (!gw) skip('pick-up: no gateway write');
      else if (!fs) skip('pick-up: no fsync');
      else if (!handoff) skip('pick-up: no hand-off');
      else {
        const cuts: [string, number, number, number][] = [
          [hopNames.pickup[0]!, mains.gateway, a, gw.t],
          [hopNames.pickup[1]!, mains.redis, gw.t, fs[0]],
          [hopNames.pickup[2]!, mains.redis, fs[0], fs[1]],
          [hopNames.pickup[3]!, mains.redis, fs[1], handoff.t],
          [hopNames.pickup[4]!, mains.runner, handoff.t, b],
        ];
        const note = new Map<string, number>();
        // The runner behind the gateway's turn: the gateway on a CPU between the hand-off and the
        // runner's first time on one.
        const rOn = (spans.get(mains.runner) ?? []).find((s) => s.cls === 'cpu' && s.to > handoff.t);
        const gwTurn = onCpu
          .filter((s) => s.tid === mains.gateway && rOn && s.to > handoff.t && s.from < rOn.from)
          .reduce((s, r) => s + Math.min(r.to, rOn?.from ?? r.to) - Math.max(r.from, handoff.t), 0);
        note.set('gateway on a CPU before the runner (of runs)', gwTurn > 0 ? 1 : 0);
        note.set('gateway CPU before the runner is on one, µs', gwTurn * 1e6);
        rows.pickup.push({
          run,
          total: b - a,
          segs: cuts.map(([name, tid, x, y]) => {
            const held = new Map<string, number>();
            blame(tid, x, y, held);
            return { name, tid, x, y, cls: classify(tid, x, y), held };
          }),
          fsyncsIn: fsyncs.filter(([f]) => f >= a && f < b).length,
          sys: sysCounts(a, b),
          note,
        });
      }
    } else skip('pick-up: no stamps');
    // The end.
    const c = h.endSent;
    const d = h.bytesAt;
    if (Number.isFinite(c) && Number.isFinite(d) && d > c) {
      const fs = fsyncs.find(([f]) => f > c && f < d);
      const rw = fs && all(c, fs[0], (e) => e.tid === mains.runner && isWrite(e)).at(-1);
      const gRead =
        fs &&
        first(
          fs[1],
          d,
          (e) => e.tid === mains.gateway && e.ev === 'sys_exit_read' && size(e) >= MIN_PUSH_BYTES,
        );
      const pushes = fs && gRead ? all(fs[1], gRead.t, (e) => e.tid === mains.redis && isWrite(e)) : [];
      const push = pushes.find((w) => gRead && size(w) === size(gRead)) ?? pushes.at(-1);
      const resp = gRead && first(gRead.t, d, (e) => e.tid === mains.gateway && isWrite(e));
      if (!fs) skip('end: no fsync');
      else if (!rw) skip('end: no runner write');
      else if (!gRead || !push) skip('end: no push');
      else if (!resp) skip('end: no response');
      else {
        const cuts: [string, number, number, number][] = [
          [hopNames.end[0]!, mains.runner, c, rw.t],
          [hopNames.end[1]!, mains.redis, rw.t, fs[0]],
          [hopNames.end[2]!, mains.redis, fs[0], fs[1]],
          [hopNames.end[3]!, mains.redis, fs[1], push.t],
          [hopNames.end[4]!, mains.gateway, push.t, resp.t],
          [hopNames.end[5]!, mains.client, resp.t, d],
        ];
        const note = new Map<string, number>();
        const writesBefore = pushes.filter((w) => w.t < push.t).length;
        note.set('Redis writes before the push after the fsync (the runner’s answer)', writesBefore);
        const rOn = (spans.get(mains.runner) ?? []).find((s) => s.cls === 'cpu' && s.to > fs[1]);
        note.set(
          'the runner on a CPU before the gateway reads its push (of runs)',
          rOn && rOn.from < gRead.t ? 1 : 0,
        );
        rows.end.push({
          run,
          total: d - c,
          segs: cuts.map(([name, tid, x, y]) => {
            const held = new Map<string, number>();
            blame(tid, x, y, held);
            return { name, tid, x, y, cls: classify(tid, x, y), held };
          }),
          fsyncsIn: fsyncs.filter(([f]) => f >= c && f < d).length,
          sys: sysCounts(c, d),
          note,
        });
      }
    } else skip('end: no stamps');
  }

  const us = (v: number) => (v * 1e6).toFixed(0);
  const p50 = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)] ?? Number.NaN;
  const mean = (v: number[]) => v.reduce((x, y) => x + y, 0) / (v.length || 1);
  const out: string[] = [];
  // Every wake-up of a main thread in the trace, by whether its CPU was idle (a halted vCPU to
  // wake: the IPI and the exit from HLT) or held by another thread.
  for (const c of ['wake-idle', 'wake-busy'] as const) {
    const v = [...spans.values()].flatMap((l) => l.filter((s) => s.cls === c).map((s) => s.to - s.from));
    const q = (f: number) => [...v].sort((x, y) => x - y)[Math.floor(v.length * f)] ?? Number.NaN;
    out.push(
      `${c === 'wake-idle' ? 'wake-ups onto an idle CPU' : 'wake-ups onto a busy CPU'} (main threads, whole trace): ${v.length}, waking → on a CPU µs p50 ${us(q(0.5))}, p90 ${us(q(0.9))}, p99 ${us(q(0.99))}`,
    );
  }
  if (skipped.size) out.push(`left out: ${[...skipped].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  for (const [hop, list] of Object.entries(rows)) {
    if (list.length === 0) continue;
    out.push(
      `\n== ${hop}: ${list.length} runs, p50 ${us(p50(list.map((r) => r.total)))} µs, mean ${us(mean(list.map((r) => r.total)))}`,
    );
    out.push(
      `  µs, p50 / mean of each class (classes: ${CLASSES.join(', ')}); seg = the segment's own length`,
    );
    out.push(
      `  ${'segment'.padEnd(34)} ${'seg'.padStart(11)} ${CLASSES.map((c) => c.padStart(11)).join(' ')}`,
    );
    const names = hopNames[hop as keyof typeof hopNames];
    const cell = (v: number[]) => `${us(p50(v))}/${us(mean(v))}`.padStart(11);
    for (const [k, name] of names.entries()) {
      const segs = list.map((r) => r.segs[k]!);
      out.push(
        `  ${name.padEnd(34)} ${cell(segs.map((s) => s.y - s.x))} ${CLASSES.map((c) => cell(segs.map((s) => s.cls.get(c)!))).join(' ')}`,
      );
    }
    const sums = (c: Cls) => list.map((r) => r.segs.reduce((s, g) => s + g.cls.get(c)!, 0));
    out.push(
      `  ${'whole hop'.padEnd(34)} ${cell(list.map((r) => r.total))} ${CLASSES.map((c) => cell(sums(c))).join(' ')}`,
    );
    out.push(
      "  while the segment's holder waited for a CPU (woken or preempted), that CPU ran (µs a run, mean):",
    );
    for (const [k, name] of names.entries()) {
      const held = new Map<string, number>();
      for (const r of list) for (const [w, v] of r.segs[k]!.held) held.set(w, (held.get(w) ?? 0) + v);
      const top = [...held].sort((p, q) => q[1] - p[1]).filter(([, v]) => v / list.length >= 1e-6);
      if (top.length)
        out.push(
          `    ${name}: ${top
            .slice(0, 8)
            .map(([w, v]) => `${w} ${us(v / list.length)}`)
            .join(', ')}`,
        );
    }
    // A run's waits for a CPU by whose thread held it: the box's other tenants, a sandbox host (its
    // next isolate's make, or a program), our path's own processes, or nobody (an idle CPU: a wake's
    // IPI and a halted vCPU's exit).
    const group = (w: string) =>
      w.startsWith('other:')
        ? 'other tenants'
        : w === 'host'
          ? 'a sandbox host'
          : w === 'idle'
            ? 'idle'
            : 'ours on the path';
    const byGroup = new Map<string, number[]>();
    for (const r of list) {
      const sum = new Map<string, number>();
      for (const g of r.segs) for (const [w, v] of g.held) sum.set(group(w), (sum.get(group(w)) ?? 0) + v);
      for (const k of ['other tenants', 'a sandbox host', 'ours on the path', 'idle']) {
        const l = byGroup.get(k) ?? [];
        l.push(sum.get(k) ?? 0);
        byGroup.set(k, l);
      }
    }
    out.push(
      `  a run's waits for a CPU, by its holder, µs p50 / mean (runs with any): ${[...byGroup]
        .map(([k, v]) => `${k} ${us(p50(v))}/${us(mean(v))} (${v.filter((x) => x > 0).length})`)
        .join(', ')}`,
    );
    const unclassed = list.map(
      (r) => r.total - r.segs.reduce((s, g) => s + [...g.cls.values()].reduce((x, y) => x + y, 0), 0),
    );
    out.push(`  not classed (no state known): p50 ${us(p50(unclassed))} mean ${us(mean(unclassed))} µs`);
    out.push(
      `  fsyncs inside the hop: ${[...countBy(list.map((r) => r.fsyncsIn))].map(([k, v]) => `${k}: ${v} runs`).join(', ')}`,
    );
    const sysKeys = new Set(list.flatMap((r) => [...r.sys.keys()]));
    out.push(
      `  syscalls a run inside the hop (mean): ${[...sysKeys]
        .sort()
        .map((k) => `${k} ${mean(list.map((r) => r.sys.get(k) ?? 0)).toFixed(2)}`)
        .join(', ')}`,
    );
    const noteKeys = new Set(list.flatMap((r) => [...r.note.keys()]));
    for (const k of noteKeys) {
      const v = list.map((r) => r.note.get(k) ?? 0);
      out.push(`  ${k}: mean ${mean(v).toFixed(2)}${k.includes('µs') ? `, p50 ${p50(v).toFixed(0)}` : ''}`);
    }
    // Who held the CPUs while the hop ran (every thread, by process kind), µs a run.
    const held = new Map<string, number>();
    for (const r of list) {
      const x = r.segs[0]!.x;
      const y = x + r.total;
      for (const s of onCpu) {
        if (s.to <= x || s.from >= y || s.tid === 0) continue;
        const k = kindOf(s.tid);
        held.set(k, (held.get(k) ?? 0) + Math.min(s.to, y) - Math.max(s.from, x));
      }
    }
    out.push(
      `  on a CPU during the hop, µs a run (both CPUs): ${[...held]
        .sort((p, q) => q[1] - p[1])
        .map(([k, v]) => `${k} ${us(v / list.length)}`)
        .join(', ')}`,
    );
    // Timelines: the median run, more if asked, the slowest if asked.
    const sorted = [...list].sort((p, q) => p.total - q.total);
    const shown = [sorted[Math.floor(sorted.length / 2)]!];
    for (let i = 1; i <= SHOW; i++) {
      const r = sorted[Math.floor((sorted.length * i) / (SHOW + 1))]!;
      if (!shown.includes(r)) shown.push(r);
    }
    if (SHOW_SLOW) shown.push(sorted.at(-1)!);
    for (const r of shown)
      out.push(timeline({ evs, idx, mainKind, label, size }, r.segs, r.run, r.total, hop));
  }
  return out.join('\n');
}

function countBy(v: number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const x of v) m.set(x, (m.get(x) ?? 0) + 1);
  return new Map([...m].sort((a, b) => a[0] - b[0]));
}
