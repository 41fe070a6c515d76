/**
 * The threads of this bench process and the cluster it started, by process kind (`client` for this
 * process, else ping-app.ts `processKind`: gateway, runner, redis, host…), for the scheduler-trace
 * probes (`seq-layout.ts`, `end-trace.ts`) to name what they see. A process or thread gone while
 * it is read is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { processTree } from './capacity-cpu.ts';
import { processKind } from './ping-app.ts';

export interface ClusterThread {
  tid: number;
  /** The process's kind. */
  kind: string;
  /** The thread's name (`/proc/<pid>/task/<tid>/comm`; '' when it could not be read). */
  comm: string;
  /** The process's main thread (tid = pid). */
  main: boolean;
}

export function clusterThreads(root: number = process.pid): ClusterThread[] {
  const threads: ClusterThread[] = [];
  for (const pid of processTree(root)) {
    let kind: string | undefined;
    try {
      kind = pid === root ? 'client' : processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    } catch {}
    if (!kind) continue;
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {}
    for (const tid of tids) {
      let comm = '';
      try {
        comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      } catch {}
      threads.push({ tid: Number(tid), kind, comm, main: Number(tid) === pid });
    }
  }
  return threads;
}
