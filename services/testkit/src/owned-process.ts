/**
 * Child processes that cannot outlive whoever started them: the local cluster's redis-server,
 * gateways and runners. Three layers, because each covers what the others miss:
 * - each child leads its own process group (`detached`), so one kill(-pid) also ends what it
 *   started (sandbox hosts) and nothing is left when the child itself is gone;
 * - `setpriv --pdeathsig KILL` (util-linux) makes the kernel SIGKILL the child when its parent dies
 *   in any way, SIGKILL included (kept across execve; plain spawn when setpriv is missing);
 * - a last-resort `exit` hook SIGKILLs every group still alive when this process exits normally.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const live = new Set<ChildProcess>();
let hooked = false;

function killGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (proc.pid === undefined) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    try {
      proc.kill(signal);
    } catch {}
  }
}

/** Spawns `command` as the leader of a new process group that dies with this process. */
export function spawnOwned(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const [cmd, argv] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
  const proc = spawn(cmd, argv, { ...options, detached: true });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const p of live) killGroup(p, 'SIGKILL');
    });
  }
  return proc;
}

/**
 * Signals the child's whole process group and resolves when the child has exited. SIGKILL follows
 * after `graceMs` (default 10 s) so a child stuck in its shutdown cannot hold the caller forever.
 */
export async function stopOwned(
  proc: ChildProcess | undefined,
  signal: NodeJS.Signals = 'SIGKILL',
  graceMs = 10_000,
): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
    // The leader is gone; members it left in its group (a sandbox host) go too.
    if (proc) killGroup(proc, 'SIGKILL');
    return;
  }
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => killGroup(proc, 'SIGKILL'), graceMs);
    proc.once('exit', () => {
      clearTimeout(timer);
      // Whatever the leader left in its group dies with it.
      killGroup(proc, 'SIGKILL');
      resolve();
    });
    // A polite signal goes to the leader alone: a runner told to stop drains the runs its sandbox
    // hosts hold, so they must not get the signal too. SIGKILL takes the whole group.
    if (signal === 'SIGKILL') killGroup(proc, signal);
    else proc.kill(signal);
  });
}
