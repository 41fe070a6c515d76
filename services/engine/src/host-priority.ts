/**
 * A sandbox host's threads at a lower CPU priority (a higher niceness) than Islet's own processes:
 * the host runs tenants' programs, and makes its next run's isolate (~1.5–2.5 ms of CPU in one
 * synchronous call) right after a run's end, while the runner that spawned it handles that end. Within
 * a scheduling group (the runner's container cgroup; its session's autogroup on a plain Linux box),
 * a woken nice-0 thread waits behind a nice-0 host for the rest of the host's slice (EEVDF's
 * run-to-parity); behind a niced host it waits less (test/bench/README.md, round 45 `host-nice`). A
 * tenant's busy program then also yields to the runner's lease renewals and watchdogs. Threads of
 * other groups (Redis, the gateway: other pods) are weighed against the group, not the host: the
 * host's niceness does not reach them.
 *
 * The host sets it on itself, before any program runs, so that it holds under every launcher: the
 * kernel sandbox's islet-jail starts it as another uid, which the engine could not renice from
 * outside. Raising one's own niceness needs no privilege; lowering it again would.
 */

/** The environment variable the engine names the niceness in (a whole number 1–19; absent: unchanged). */
export const HOST_NICE_ENV = 'ISLET_HOST_NICE';
/**
 * The niceness of a sandbox host unless the engine is told otherwise (`EngineOptions.hostNice`): 0,
 * unchanged. Measured at 10 (test/bench/README.md, round 45 `host-nice`): the wait it was for (Redis
 * behind a host's make, on the end hop) is between groups and did not move; inside the group a niced
 * host gets ~1/10 of a CPU its nice-0 neighbours want, and timing-bound engine tests failed under
 * this box's load (3 of 92 at 10, 0 of 92 at 0). An operator who wants tenants' programs below the
 * runner sets ISLET_RUNNER_HOST_NICE.
 */
export const DEFAULT_HOST_NICE = 0;
/** Linux's largest niceness. */
export const MAX_NICE = 19;

/** The niceness the environment asks for, or undefined (absent, 0 or not a whole number 1–19). */
export function hostNiceFrom(env: Record<string, string | undefined>): number | undefined {
  const text = env[HOST_NICE_ENV];
  if (text === undefined || !/^[0-9]{1,2}$/.test(text)) return undefined;
  const nice = Number(text);
  return nice >= 1 && nice <= MAX_NICE ? nice : undefined;
}

/**
 * Raises every thread of this process to `nice` (Linux's niceness is a thread's: a thread made later
 * inherits its maker's, and Node's own threads exist before any script runs, so each is set); a
 * thread already nicer is left as it is. Returns how many threads were set. Never throws: a thread
 * gone or refused is skipped, and without /proc only the calling thread is set.
 */
export function raiseOwnNiceness(nice: number): number {
  const { getPriority, setPriority } = process.getBuiltinModule('node:os');
  let tids: number[];
  try {
    tids = process.getBuiltinModule('node:fs').readdirSync('/proc/self/task').map(Number);
  } catch {
    tids = [0];
  }
  let set = 0;
  for (const tid of tids) {
    try {
      if (getPriority(tid) >= nice) continue;
      setPriority(tid, nice);
      set++;
    } catch {
      // gone, or not ours to change
    }
  }
  return set;
}
