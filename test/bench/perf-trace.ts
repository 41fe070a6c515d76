/**
 * What the call benches' `perf` traces share (call-trace.ts, first-call-trace.ts, par-timeline.ts):
 * the bench's own process (the App) and its cluster's processes by kind, and a `perf record` of
 * tracepoints on them on the kernel's monotonic clock (`-k mono`, the benches' own stamps' clock).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { processTree } from './capacity-cpu.ts';
import { processKind } from './ping-app.ts';

/**
 * This process ('app') and every process under it that `processKind` names; a sandbox host started
 * during the trace (the runner's spares) is counted as a host by the readers.
 */
export function tracedProcesses(): { pids: number[]; label: Map<number, string> } {
  const label = new Map<number, string>([[process.pid, 'app']]);
  const pids = [process.pid];
  for (const pid of processTree(process.pid).slice(1)) {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    const kind = processKind(cmd);
    if (!kind) continue;
    pids.push(pid);
    label.set(pid, kind);
  }
  return { pids, label };
}

/** `perf record` of `events` on `pids` into `file`, given 1.5 s to attach before it returns. */
export async function startPerfRecord(
  file: string,
  pids: number[],
  events: readonly string[],
): Promise<ChildProcess> {
  const tracer = spawn(
    'perf',
    ['record', '-q', '-k', 'mono', '-o', file, '-p', pids.join(','), ...events.flatMap((e) => ['-e', e])],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await new Promise((r) => setTimeout(r, 1500));
  return tracer;
}
