/**
 * `tail-classify.ts`'s reading of every CPU's switches (round 36, `tail`): an on-CPU interval is
 * its task's until the switch that takes it off, known by that switch's tgid; the cluster's
 * processes are named by kind and thread, a replacement host's first 300 ms apart, the box's other
 * processes as `other:`; a run's CPU is the part of each interval inside it. And the report's
 * quiet subset: runs where other processes held a CPU are left out of it, so a slow run of the
 * box's own making is not read as the cluster's. Runs in `npm test` with the ratio guard.
 */
import { describe, expect, it } from 'vitest';
import { STAGES } from './stages.ts';
import { cpuByOwner, type TailDump, tailReport } from './tail-classify.ts';

/** One `perf script -F pid,cpu,time,trace` line of `sched:sched_switch` (time in s, monotonic). */
const sw = (pid: number, cpu: number, s: number, comm: string) =>
  `${pid} [00${cpu}] ${s.toFixed(6)}: prev_comm=${comm} prev_pid=${pid} prev_prio=120 prev_state=S ==> next_comm=x next_pid=1 next_prio=120`;

describe('cpuByOwner', () => {
  const kindOf = new Map([
    [100, 'gateway'],
    [200, 'host'],
  ]);

  it("gives each interval to the task its closing switch names, clipped to the run's window", () => {
    const text = [
      sw(0, 0, 10.0, 'swapper/0'), // opens CPU 0's timeline
      sw(100, 0, 10.004, 'MainThread'), // gateway 10.000–10.004
      sw(555, 0, 10.009, 'cc1'), // another process 10.004–10.009
      sw(0, 0, 10.02, 'swapper/0'), // idle 10.009–10.020
    ].join('\n');
    // Monotonic 10 s = stamps' 10,000 ms (offset 0); the run 10,002–10,012 ms.
    const [cpu] = cpuByOwner(text, 0, kindOf, [{ sent: 10_002, received: 10_012 }]);
    expect(cpu!['gateway:MainThread']).toBeCloseTo(2, 6);
    expect(cpu!['other:cc']).toBeCloseTo(5, 6);
    expect(cpu!.idle).toBeCloseTo(3, 6);
  });

  it("counts a replacement host's first 300 ms as its start, then as the host it is", () => {
    const text = [
      sw(0, 1, 20.0, 'swapper/1'),
      sw(200, 1, 20.1, 'MainThread'), // 20.000–20.100: starting (spawned at 19.95 s)
      sw(0, 1, 20.3, 'swapper/1'),
      sw(200, 1, 20.4, 'MainThread'), // 20.300–20.400: past its start
    ].join('\n');
    const cpu = cpuByOwner(
      text,
      0,
      kindOf,
      [
        { sent: 20_000, received: 20_100 },
        { sent: 20_300, received: 20_400 },
      ],
      new Map([[200, 19_950]]),
    );
    expect(cpu[0]!['host starting (a replacement)']).toBeCloseTo(100, 6);
    expect(cpu[0]!['host:MainThread']).toBeUndefined();
    expect(cpu[1]!['host:MainThread']).toBeCloseTo(100, 6);
  });
});

describe('tailReport', () => {
  const stages = (ms: number) => STAGES.map((s, i) => (i === 0 ? ms : s.sub || s.wholeMs ? Number.NaN : 0));
  const run = (i: number, ms: number, other: number): TailDump['runs'][number] => ({
    sent: i * 100,
    received: i * 100 + ms,
    stages: stages(ms),
    sched: {},
    hosts: [],
    cpu: { 'gateway:MainThread': 1, ...(other ? { 'other:cc1': other } : {}) },
  });

  it('reads the slow runs of the quiet subset apart from those where other processes ran', () => {
    // 200 runs of 3 ms; 4 of 20 ms with another process on a CPU, 2 of 9 ms without.
    const runs = Array.from({ length: 200 }, (_, i) =>
      i < 4 ? run(i, 20, 15) : i < 6 ? run(i, 9, 0) : run(i, 3, 0),
    );
    const lines = tailReport({ runs, fsyncs: [], events: [], hostStarts: [] });
    expect(lines[0]).toMatch(/^200 runs: p50 3\.00 .* max 20\.00 ms$/);
    const quiet = lines.findIndex((l) => l.startsWith('runs in which other processes'));
    expect(lines[quiet]).toMatch(/0\.1 ms or less: 196 of 200$/);
    expect(lines[quiet + 1]).toMatch(/^196 runs: p50 3\.00 .* max 9\.00 ms$/);
    const rules = lines.indexOf('all runs, slowest 2 % (4 runs), by the first rule that holds:');
    expect(lines[rules + 1]).toMatch(/^ +4 +\(20\.00 per 1000 runs\) +other processes on a CPU/);
  });
});
