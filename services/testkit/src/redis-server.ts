import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';
import { spawnOwned, stopOwned } from './owned-process.ts';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** SIGKILLs the server; data survives only through the AOF. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and directory (AOF replayed). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Append-only file, fsync every second. Default true (BullMQ's recommendation). */
  appendOnly?: boolean;
  /** Keep the data directory after stop. Default false. */
  keepDir?: boolean;
  /** AOF fsync policy. Default `everysec`; `always` loses no acknowledged write on SIGKILL (chaos tests). */
  appendFsync?: 'always' | 'everysec' | 'no';
  /**
   * `maxmemory` in bytes: past it writes fail (noeviction) instead of the host running out of
   * memory or Redis dropping queued runs. Default 0 = no limit.
   */
  maxMemoryBytes?: number;
}

/**
 * Starts Debian's redis-server on a free loopback port in its own temp directory,
 * configured as BullMQ asks (maxmemory-policy noeviction), without per-command latency
 * histograms (`latency-tracking no`). Never touches a server the user runs.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'islet-redis-'));
  let child: ChildProcess | undefined;

  const launch = async () => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      options.appendOnly === false ? 'no' : 'yes',
      '--appendfsync',
      options.appendFsync ?? 'everysec',
      '--maxmemory',
      String(options.maxMemoryBytes ?? 0),
      '--maxmemory-policy',
      'noeviction',
      // Per-command latency histograms (INFO latencystats) are kept for every command a script
      // runs too: ~1.7% of the server's CPU under the cluster's load, and nothing reads them.
      '--latency-tracking',
      'no',
      // A new stream's first node is preallocated at this size (Redis 7.0): a run's events stream
      // holds 3 entries for its whole retention, so the default 4096 left ~3.6 KB unused a run
      // (a retained run 9.7 -> 6.5 KB; test/bench/README.md, round 31 `redis-lua`).
      '--stream-node-max-bytes',
      '1024',
      '--protected-mode',
      'yes',
      '--loglevel',
      'warning',
    ];
    const proc = spawnOwned('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
    child = proc;
    try {
      await waitForReady(port, 10_000, () => proc.exitCode !== null);
    } catch (err) {
      await stopOwned(proc);
      throw err;
    }
  };

  try {
    await launch();
  } catch (err) {
    if (!options.keepDir) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const waitExit = (signal: NodeJS.Signals) => stopOwned(child, signal);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    kill: () => waitExit('SIGKILL'),
    restart: async () => {
      await waitExit('SIGKILL');
      await launch();
    },
    stop: async () => {
      await waitExit('SIGTERM');
      if (!options.keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForReady(port: number, timeoutMs: number, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`redis-server exited before listening on ${port}`);
    // Listening is not ready: while it replays the AOF the server answers `-LOADING`.
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (chunk) => {
        socket.destroy();
        resolve(chunk.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
      socket.once('close', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`redis-server on ${port} was not ready within ${timeoutMs}ms`);
}
