import { readdirSync } from 'node:fs';

/** The thread ids of `pid` under /proc, none when the process is gone. */
export function taskIds(pid: number | string): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}
