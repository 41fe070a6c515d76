/**
 * Real Redis Cluster for tests: Debian's `redis-server --cluster-enabled yes` processes on free
 * loopback ports (the cluster bus on another free port, `cluster-port`, so no port+10000 clash),
 * joined by `redis-cli --cluster create`. Also a single slot-checking node: one cluster-enabled
 * server owning all 16384 slots, where a plain client works but any MULTI, script or multi-key
 * command spanning two hash slots fails with CROSSSLOT — the cheap way to catch slot-unsafe code.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';
import { spawnOwned, stopOwned } from './owned-process.ts';

const run = promisify(execFile);

export interface RedisClusterOptions {
  /** Masters. Default 3 (the smallest cluster redis-cli accepts). */
  masters?: number;
  /** Replicas per master. Default 1. */
  replicasPerMaster?: number;
  /** `requirepass` + `masterauth` on every node. Default none. */
  password?: string;
  /** `cluster-node-timeout`: how long before a silent master is failed over, ms. Default 1000. */
  nodeTimeoutMs?: number;
  /** AOF fsync policy. Default `always`: a SIGKILLed master loses no write it acknowledged locally. */
  appendFsync?: 'always' | 'everysec';
  /**
   * TLS only: every node listens with TLS on its port (no plain port), the cluster bus and
   * replication use TLS too, and the nodes announce their TLS ports. PEM files: the node
   * certificate (valid for 127.0.0.1), its key and the CA that signed it. Default: plain TCP.
   */
  tls?: { certFile: string; keyFile: string; caFile: string };
}

export interface RedisClusterNode {
  readonly port: number;
  /** Whether the process is still running (a killed master stays in the list). */
  readonly alive: boolean;
}

export interface RedisCluster {
  /** Every node, `127.0.0.1:p1,127.0.0.1:p2,…` (what `ISLET_REDIS_URL` takes in cluster mode). */
  readonly seeds: string;
  readonly nodes: readonly RedisClusterNode[];
  readonly password: string | undefined;
  /** Ports of the live masters that hold slots, from `CLUSTER NODES`. */
  masters(): Promise<number[]>;
  /** Port of the live master that serves `key`'s slot. */
  masterOf(key: string): Promise<number>;
  /**
   * SIGKILLs a master (default: the first live one) and resolves once its replica was promoted
   * and every live node reports `cluster_state:ok`. Returns the killed port.
   */
  killMaster(port?: number): Promise<number>;
  /** Resolves when every live node reports `cluster_state:ok` and all slots are served. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 1;
  const password = options.password;
  const dir = mkdtempSync(join(tmpdir(), 'islet-rcluster-'));
  const procs = new Map<number, ChildProcess>();
  const auth = password ? ['-a', password, '--no-auth-warning'] : [];
  const tls = options.tls;
  const cliTls = tls ? ['--tls', '--cacert', tls.caFile] : [];
  const cli = async (port: number, ...args: string[]) =>
    (
      await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...auth, ...cliTls, ...args], {
        timeout: 10_000,
      })
    ).stdout;
  const stopAll = async () => {
    for (const p of [...procs.values()].reverse()) await stopOwned(p, 'SIGKILL');
    procs.clear();
    rmSync(dir, { recursive: true, force: true });
  };
  const alive = (port: number) => {
    const p = procs.get(port);
    return p !== undefined && p.exitCode === null && p.signalCode === null;
  };
  const ports: number[] = [];

  async function clusterNodes(): Promise<Array<{ port: number; master: boolean; slots: boolean }>> {
    for (const port of ports.filter(alive)) {
      try {
        const text = await cli(port, 'cluster', 'nodes');
        return text
          .trim()
          .split('\n')
          .map((line) => {
            const f = line.split(' ');
            return {
              port: Number(/:(\d+)@/.exec(f[1] ?? '')?.[1] ?? 0),
              master: (f[2] ?? '').includes('master'),
              slots: f.length > 8,
            };
          });
      } catch {}
    }
    throw new Error('no live cluster node answered CLUSTER NODES');
  }

  /**
   * Waits until every replica of the master on `port` is online (its first sync done, the stream
   * flowing) and, with `caughtUp`, has acknowledged everything the master had written when this was
   * called (replicas acknowledge about once a second). With cluster-replica-validity-factor 0 a
   * replica still in its first sync can be promoted, empty: a CI run lost the API key written at
   * setup that way and answered 401 from then on. Writes still streaming at a kill are another
   * matter (what a failover may lose, which the chaos runs measure), so a kill waits for `online`.
   */
  async function replicasReady(port: number, caughtUp: boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const offsetOf = (info: string) => Number(/^master_repl_offset:(\d+)/m.exec(info)?.[1] ?? 0);
    const target = caughtUp ? offsetOf(await cli(port, 'info', 'replication')) : 0;
    for (;;) {
      const info = await cli(port, 'info', 'replication');
      const states = [...info.matchAll(/^slave\d+:.*state=(\w+),offset=(\d+)/gm)];
      if (states.length >= replicas && states.every((m) => m[1] === 'online' && Number(m[2]) >= target))
        return;
      if (Date.now() > deadline)
        throw new Error(`the replicas of ${port} are not ready (offset ${target}): ${info}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const masterPorts = async () =>
    (await clusterNodes()).filter((n) => n.master && n.slots && alive(n.port)).map((n) => n.port);

  async function waitHealthy(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      try {
        let ok = true;
        for (const port of ports.filter(alive)) {
          const info = await cli(port, 'cluster', 'info');
          if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) {
            ok = false;
            last = `${port}: ${info.split('\n').slice(0, 3).join(' ')}`;
            break;
          }
        }
        if (ok) {
          const nodes = await clusterNodes();
          // Every slot-holding master is a live process (no dead master still listed as serving).
          if (nodes.filter((n) => n.master && n.slots).every((n) => alive(n.port))) return;
          last = 'a dead master still holds slots';
        }
      } catch (err) {
        last = String(err);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // What the live nodes last logged (elections, votes, state changes), to tell why.
    const logs = ports
      .filter(alive)
      .map((port) => {
        try {
          const lines = readFileSync(join(dir, `node-${port}.log`), 'utf8')
            .trim()
            .split('\n');
          return `-- ${port}:\n${lines.slice(-8).join('\n')}`;
        } catch {
          return `-- ${port}: no log`;
        }
      })
      .join('\n');
    throw new Error(`Redis Cluster not healthy within ${timeoutMs}ms (${last})\n${logs}`);
  }

  try {
    // A port handed out by freePort can be taken by a parallel test before redis-server binds it
    // (the node then exits; its log goes to stdout, ignored): such a node is replaced on new ports.
    for (let i = 0; i < masters * (1 + replicas); i++) {
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const busPort = await freePort();
        const proc = spawnOwned(
          'redis-server',
          [
            ...(tls
              ? [
                  '--port',
                  '0',
                  '--tls-port',
                  String(port),
                  '--tls-cluster',
                  'yes',
                  '--tls-replication',
                  'yes',
                  '--tls-cert-file',
                  tls.certFile,
                  '--tls-key-file',
                  tls.keyFile,
                  '--tls-ca-cert-file',
                  tls.caFile,
                  '--tls-auth-clients',
                  'no',
                ]
              : ['--port', String(port)]),
            ...clusterNodeArgs(busPort, dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            String(options.nodeTimeoutMs ?? 1000),
            '--dbfilename',
            `dump-${port}.rdb`,
            '--appenddirname',
            `aof-${port}`,
            '--save',
            '',
            '--appendonly',
            'yes',
            '--appendfsync',
            options.appendFsync ?? 'always',
            '--maxmemory-policy',
            'noeviction',
            // A replica fails over however long ago it last heard its master: on a loaded 2-core
            // machine a replica once judged its data too old and the slots stayed down for good.
            '--cluster-replica-validity-factor',
            '0',
            // Kept for the failure message of waitHealthy (the directory goes at stop).
            '--logfile',
            join(dir, `node-${port}.log`),
            '--loglevel',
            'notice',
            ...(password ? ['--requirepass', password, '--masterauth', password] : []),
          ],
          { stdio: ['ignore', 'ignore', 'inherit'] },
        );
        procs.set(port, proc);
        try {
          await waitForPing(cli, port, () => proc.exitCode !== null || proc.signalCode !== null);
          ports.push(port);
          break;
        } catch (err) {
          procs.delete(port);
          await stopOwned(proc, 'SIGKILL');
          if (attempt >= 3) throw err;
        }
      }
    }
    await run(
      'redis-cli',
      [
        ...auth,
        ...cliTls,
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 60_000 },
    );
    await waitHealthy();
    // Replicas attach after the slots are assigned; a failover test needs them in sync first.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const nodes = await clusterNodes();
      if (nodes.filter((n) => !n.master).length >= masters * replicas) break;
      if (Date.now() > deadline) throw new Error('replicas did not attach');
      await new Promise((r) => setTimeout(r, 100));
    }
    if (replicas > 0) for (const port of await masterPorts()) await replicasReady(port, true);
  } catch (err) {
    await stopAll();
    throw err;
  }

  return {
    seeds: ports.map((p) => `127.0.0.1:${p}`).join(','),
    get nodes() {
      return ports.map((port) => ({ port, alive: alive(port) }));
    },
    password,
    masters: masterPorts,
    async masterOf(key: string) {
      const slot = Number((await cli((await masterPorts())[0]!, 'cluster', 'keyslot', key)).trim());
      for (const port of await masterPorts()) {
        const text = await cli(port, 'cluster', 'nodes');
        const me = text.split('\n').find((l) => l.includes('myself'));
        const ranges = (me ?? '').split(' ').slice(8);
        for (const r of ranges) {
          const [a, b] = r.split('-').map(Number);
          if (a !== undefined && slot >= a && slot <= (b ?? a)) return port;
        }
      }
      throw new Error(`no live master serves slot ${slot}`);
    },
    async killMaster(port?: number) {
      const target = port ?? (await masterPorts())[0];
      if (target === undefined) throw new Error('no live master');
      if (replicas > 0) await replicasReady(target, false);
      await stopOwned(procs.get(target), 'SIGKILL');
      await waitHealthy();
      return target;
    },
    waitHealthy,
    stop: stopAll,
  };
}

export interface SlotCheckingRedis {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

/** What every cluster-enabled node of the testkit shares: loopback only, its bus port, its files in `dir`. */
function clusterNodeArgs(busPort: number, dir: string, configFile: string): string[] {
  return [
    '--cluster-port',
    String(busPort),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    configFile,
  ];
}

/**
 * One `redis-server --cluster-enabled yes` that owns every slot. A plain (non-cluster) client works
 * against it, but anything touching two hash slots at once fails with CROSSSLOT, exactly as on a
 * real cluster.
 */
export async function startSlotCheckingRedis(): Promise<SlotCheckingRedis> {
  const port = await freePort();
  const busPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'islet-slotcheck-'));
  const cli = async (p: number, ...args: string[]) =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(p), ...args], { timeout: 10_000 })).stdout;
  const proc = spawnOwned(
    'redis-server',
    [
      '--port',
      String(port),
      ...clusterNodeArgs(busPort, dir, 'nodes.conf'),
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--loglevel',
      'warning',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const stop = async () => {
    await stopOwned(proc, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPing(cli, port);
    await cli(port, 'cluster', 'addslotsrange', '0', '16383');
    const deadline = Date.now() + 10_000;
    while (!/cluster_state:ok/.test(await cli(port, 'cluster', 'info'))) {
      if (Date.now() > deadline) throw new Error('slot-checking Redis did not reach cluster_state:ok');
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, url: `redis://127.0.0.1:${port}`, stop };
}

async function waitForPing(
  cli: (port: number, ...args: string[]) => Promise<string>,
  port: number,
  exited: () => boolean = () => false,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await cli(port, 'ping')).trim() === 'PONG') return;
    } catch {}
    if (exited()) throw new Error(`redis-server on ${port} exited before answering PING`);
    if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer PING`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
