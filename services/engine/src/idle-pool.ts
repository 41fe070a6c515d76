/** The engine's idle hosts over its runner-wide cap (engine.ts `park`). */
import type { HostProcess } from './host-process.ts';

/**
 * Stops the hosts idle longest until at most `maxIdleTotal` are idle, whichever tenant they served
 * (a spare joins a pool at its start, so the oldest may be anywhere).
 */
export function trimIdle(idle: Map<string, HostProcess[]>, maxIdleTotal: number): void {
  let total = 0;
  // `forEach`: after every run; `for … of` its values allocates an iterator result a tenant.
  idle.forEach((p) => {
    total += p.length;
  });
  while (total > maxIdleTotal) {
    let oldest: HostProcess | undefined;
    for (const p of idle.values())
      for (const h of p) if (!oldest || h.idleSince < oldest.idleSince) oldest = h;
    if (!oldest) break;
    const from = idle.get(oldest.partition);
    from?.splice(from.indexOf(oldest), 1);
    if (from && from.length === 0) idle.delete(oldest.partition);
    void oldest.stop();
    total--;
  }
}
