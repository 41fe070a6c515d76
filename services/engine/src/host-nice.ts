/**
 * A sandbox host's CPU priority below its engine's: the host lowers its own (every thread's) nice
 * value as its first act, so the runner's, Redis's and the gateway's short work (a run's end, the
 * next pick-up) takes a shared core from a host's after-run work (its isolate's disposal, the next
 * isolate's preparation) and from programs, instead of waiting for it. Nice orders, it does not cap:
 * a program still gets a CPU nobody else wants, and its time budget is the engine's clock as before.
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The host's argument carrying it (after the script's path: node leaves it in process.argv). */
export const HOST_NICE_ARG = '--islet-nice=';

/** The nice value hosts get by default (0 = as the engine; 19 the lowest). */
export const DEFAULT_HOST_NICE = 10;

/** The option as an integer 0..19 (out-of-range values clamped, anything else the default). */
export function hostNiceOf(value: number | undefined): number {
  if (value === undefined || !Number.isFinite(value)) return DEFAULT_HOST_NICE;
  return Math.min(19, Math.max(0, Math.trunc(value)));
}

/**
 * Sets every thread of this process to `nice`. Linux's setpriority on a pid sets that one thread,
 * and a new thread takes its creator's value: node's and V8's threads already exist when the host's
 * first line runs, so each is set by its id; isolated-vm's, started later by these, inherit it.
 * Best effort: lowering one's priority needs no privilege, and where it fails the host runs as before.
 */
export function niceAllThreads(nice: number): void {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    tids = ['0'];
  }
  for (const tid of tids) {
    try {
      setPriority(Number(tid), nice);
    } catch {}
  }
}

/** The host's own side: the value its engine gave in argv, if any. */
export function niceFromArgv(argv: readonly string[]): number | undefined {
  const arg = argv.find((a) => a.startsWith(HOST_NICE_ARG));
  if (arg === undefined) return undefined;
  const n = Number(arg.slice(HOST_NICE_ARG.length));
  return Number.isInteger(n) && n > 0 && n <= 19 ? n : undefined;
}
