/**
 * The sandbox hosts' EEVDF slice (the runner's `ISLET_RUNNER_HOST_SLICE_US`, round 46 `host-slice`).
 * Linux weighs one process against another only inside a scheduling group (a container's cgroup, or
 * a session's autogroup on a dev machine); Redis and the gateway are other groups than the runner's,
 * where the hosts are, so a host's niceness cannot make them wait less behind it (round 45
 * `host-nice`). A group's slice is its shortest queued thread's, so a slice is the one attribute
 * that crosses: hosts asking for a long one leave the runner's group a later deadline while only they
 * run, and a woken Redis or gateway (base slice) preempts at once (PREEMPT_SHORT) instead of
 * waiting out run-to-parity. CPU shares are unchanged.
 *
 * Node cannot set another process's scheduler attributes, and under islet-jail the host is another
 * uid; the attributes are inherited by fork, execve and every thread, so the runner's spawning thread
 * takes the slice for the synchronous spawn only (`around`) and then the kernel's default again.
 */
import { hardenAddon } from './harden.ts';

export interface HostSliceSpawn {
  /** Runs a synchronous spawn with the slice taken for it; absent when off or not available. */
  around?: <T>(spawn: () => T) => T;
  /** Why the slice is not taken (addon missing, kernel without custom slices, refused). */
  note?: string;
}

export function hostSliceSpawn(sliceUs: number): HostSliceSpawn {
  if (!sliceUs) return {};
  const addon = hardenAddon();
  if (!addon) return { note: 'islet-harden.node is not built: sandbox hosts keep the kernel slice' };
  const ns = sliceUs * 1000;
  // A trial on this thread: a kernel before 6.12 takes sched_runtime and ignores it for a fair
  // thread (the read-back differs), and a profile may refuse the call.
  const set = addon.setSlice(ns);
  const read = addon.getSlice();
  addon.setSlice(0);
  if (set !== 0 || read !== ns)
    return { note: `sched_setattr slice ${ns} ns: ${set !== 0 ? `errno ${-set}` : `read back ${read}`}` };
  return {
    around<T>(spawn: () => T): T {
      addon.setSlice(ns);
      try {
        return spawn();
      } finally {
        // The spawning thread is the runner's main thread: back to the kernel's default.
        addon.setSlice(0);
      }
    },
  };
}
