import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';
import { spawnOwned, stopOwned } from './owned-process.ts';

export interface SentinelGroup {
  readonly masterName: string;
  readonly password: string;
  readonly masterPort: number;
  readonly replicaPort: number;
  /** `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` (ISLET_REDIS_SENTINELS). */
  readonly sentinels: string;
  /** SIGKILLs the current master's process (the one started as master). */
  killMaster(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One master, one replica and three sentinels (quorum 2), Debian's redis-server, free loopback
 * ports, one temp directory. Both data nodes require `password` and use it to replicate, AOF with
 * fsync always. Sentinels declare the master down after `downAfterMs`.
 */
export async function startSentinelGroup(options: { downAfterMs?: number } = {}): Promise<SentinelGroup> {
  const dir = mkdtempSync(join(tmpdir(), 'islet-sentinel-'));
  const password = 'islet-test-pass';
  const masterName = 'islet';
  const procs: ChildProcess[] = [];
  const stopAll = async () => {
    for (const p of procs.splice(0).reverse()) await stopOwned(p, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  const dataArgs = (port: number, name: string) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    join(dir),
    '--dbfilename',
    `${name}.rdb`,
    '--appenddirname',
    `${name}-aof`,
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--maxmemory-policy',
    'noeviction',
    '--requirepass',
    password,
    '--masterauth',
    password,
    '--loglevel',
    'warning',
  ];
  try {
    const masterPort = await freePort();
    const replicaPort = await freePort();
    const master = spawnOwned('redis-server', dataArgs(masterPort, 'master'), { stdio: 'ignore' });
    procs.push(master);
    await waitForPort(masterPort);
    procs.push(
      spawnOwned(
        'redis-server',
        [...dataArgs(replicaPort, 'replica'), '--replicaof', '127.0.0.1', String(masterPort)],
        { stdio: 'ignore' },
      ),
    );
    await waitForPort(replicaPort);
    await replicaOnline(replicaPort, password);
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      sentinelPorts.push(port);
      const conf = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
          `sentinel auth-pass ${masterName} ${password}`,
          `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${masterName} 5000`,
          `sentinel parallel-syncs ${masterName} 1`,
          '',
        ].join('\n'),
      );
      procs.push(
        spawnOwned('redis-server', [conf, '--sentinel', '--loglevel', 'warning'], { stdio: 'ignore' }),
      );
      await waitForPort(port);
    }
    return {
      masterName,
      password,
      masterPort,
      replicaPort,
      sentinels: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
      // Only once the replica holds the data (see replicaOnline): a kill during its first sync
      // would hand the sentinels an empty replica to promote.
      killMaster: async () => {
        await replicaOnline(replicaPort, password);
        await stopOwned(master, 'SIGKILL');
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`nothing listened on ${port} within ${timeoutMs}ms`);
}

/** Waits until the replica on `port` finished its first sync and streams from its master. */
async function replicaOnline(port: number, password: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const { stdout } = await promisify(execFile)(
        'redis-cli',
        ['-h', '127.0.0.1', '-p', String(port), '-a', password, '--no-auth-warning', 'info', 'replication'],
        { timeout: 5000 },
      );
      last = stdout;
      if (/^master_link_status:up/m.test(stdout) && !/^master_sync_in_progress:1/m.test(stdout)) return;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the replica on ${port} did not come online: ${last}`);
}
