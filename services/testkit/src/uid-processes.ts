/**
 * The processes a uid still has, read from /proc: the sandbox tests start programs under a uid of
 * their own (islet-jail's per-run uids, a setpriv'd launcher or runner) and check that none
 * outlives what should have ended it, then clean up whatever did.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Live (not zombie) processes whose real uid is `uid`, by pid. */
export function processesOf(uid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid && !/^State:\s+Z/m.test(status))
        out.push(Number(name));
    } catch {}
  }
  return out;
}

/** SIGKILLs every live process of `uid` until it has none (at most 50 rounds 20 ms apart). */
export async function killAllOf(uid: number): Promise<void> {
  for (let i = 0; i < 50 && processesOf(uid).length; i++) {
    for (const pid of processesOf(uid))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    await new Promise((r) => setTimeout(r, 20));
  }
}
