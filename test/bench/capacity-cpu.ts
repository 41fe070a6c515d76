/**
 * CPU time of processes from `/proc/<pid>/stat` (utime + stime, clock ticks → ms): what the
 * capacity bench charges to Redis, gateways and runners per run. Live processes only; a process
 * that exits between two samples is dropped from both, which is why the bench samples the same
 * pid list before and after.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/** utime + stime of one process, ms (NaN when it is gone). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: state(0) … utime(11) stime(12).
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return Number.NaN;
  }
}

/** Every live process's parent, from `/proc/<pid>/stat`. */
export function processParents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      out.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  return out;
}

/** `root` and every live descendant (a runner and its sandbox hosts and jails). */
export function processTree(root: number): number[] {
  const parent = processParents();
  const out = [root];
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p))
      if (p === root) {
        out.push(pid);
        break;
      }
  }
  return out;
}

/** The redis-server processes serving these ports (redis-server titles itself `host:port`). */
export function redisPids(ports: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() !== 'redis-server') continue;
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      for (const port of ports) if (new RegExp(`:${port}(\\s|\\0|$)`).test(cmd)) out.set(port, Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

/** Sum of cpuMs over `pids`, skipping any that are gone. */
export function totalCpuMs(pids: number[]): number {
  return pids.map(cpuMs).reduce((s, x) => s + (Number.isFinite(x) ? x : 0), 0);
}
