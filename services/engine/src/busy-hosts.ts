/**
 * The engine's busy hosts, and the one handle that keeps the caller's event loop alive while any
 * is busy: a run waits for its host's answer, and a process with nothing else to do must not exit
 * before it comes.
 */
import type { HostProcess } from './host-process.ts';

/**
 * The keep-alive's period: it never needs to fire (Node's longest timer, ~24.8 days); it exists to
 * be ref'd.
 */
const KEEP_ALIVE_PERIOD_MS = 2 ** 31 - 1;

/**
 * A host's own handles (its process and three pipes) are unref'd once, at its first idle, and stay
 * so (host-process.ts `becameIdle`); this one timer is ref'd while any host is busy. Each host's four
 * handles ref'd at every acquire and unref'd at every release were eight calls into libuv a run,
 * ~11 µs of a runner's ~1 ms a run at 16 clients and ~21 µs at one (test/bench/README.md, round 39
 * `runner-cpu`); a timer's ref and unref are a count in Node's timer list, and under load the set
 * is rarely empty, so it is rarely touched at all.
 */
export class BusyHosts {
  private readonly hosts = new Set<HostProcess>();
  private readonly keepAlive = setInterval(() => {}, KEEP_ALIVE_PERIOD_MS).unref();

  add(host: HostProcess): void {
    this.hosts.add(host);
    if (this.hosts.size === 1) this.keepAlive.ref();
  }

  delete(host: HostProcess): void {
    if (this.hosts.delete(host) && this.hosts.size === 0) this.keepAlive.unref();
  }

  get size(): number {
    return this.hosts.size;
  }

  [Symbol.iterator](): IterableIterator<HostProcess> {
    return this.hosts.values();
  }

  /** The engine closed: no run waits any more. */
  close(): void {
    clearInterval(this.keepAlive);
  }
}
