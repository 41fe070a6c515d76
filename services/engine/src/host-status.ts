/**
 * A sandbox host's resident memory as the engine reads it from /proc/<pid>/status (from outside:
 * never reported by the host, which runs tenant code). host-process.ts keeps each host's file open.
 */
import { readFileSync, readSync } from 'node:fs';

export const VM_RSS = /^VmRSS:\s+(\d+) kB/m;

/** VmRSS of /proc/<pid>/status, bytes; undefined when it cannot be read. */
export function readResidentBytes(pid: number): number | undefined {
  try {
    const kb = VM_RSS.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

const RSS_ANON = /^RssAnon:\s+(\d+) kB/m;
const RSS_SHMEM = /^RssShmem:\s+(\d+) kB/m;

/** RssAnon + RssShmem of a /proc/<pid>/status text, bytes; undefined when either is missing. */
export function privateBytesOf(status: string): number | undefined {
  const anon = RSS_ANON.exec(status)?.[1];
  const shmem = RSS_SHMEM.exec(status)?.[1];
  return anon === undefined || shmem === undefined ? undefined : (Number(anon) + Number(shmem)) * 1024;
}

/** /proc/<pid>/status's first 4 KiB: VmRSS and RssAnon/RssShmem are in its first ~30 lines. Shared: read and parsed at once. */
const statusBytes = Buffer.alloc(4096);

/** The text of an open /proc/<pid>/status, read again from its start (throws when the process is gone). */
export function readStatusText(fd: number): string {
  const n = readSync(fd, statusBytes, 0, statusBytes.length, 0);
  return statusBytes.toString('latin1', 0, n);
}
