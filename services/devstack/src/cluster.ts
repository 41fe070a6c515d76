/**
 * `startCluster()`: the whole Islet cluster on one machine as real child processes — its own
 * redis-server on a free port (or an existing Redis of any mode: standalone, Sentinel, Cluster),
 * N gateways, M runners per sandbox mode — plus a dev
 * tenant with a key. Used by `npm start`, the e2e and chaos tests and the Prometheus scrape test.
 * A child process's start and ready line are in cluster-child.ts, the children's environment
 * (secrets as files) in cluster-env.ts.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createRedis,
  createSettingsStore,
  createTenantStore,
  generateSealKey,
  type RedisConfig,
  SCOPES,
} from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import { freePort, type RedisServer, startRedis, stopOwned } from '@islet/testkit';
import { type Child, launchChild, type ProcessInfo, relaunchOnFreePorts } from './cluster-child.ts';
import { inheritedEnv, secretsToFiles } from './cluster-env.ts';
import { idleSnapshot, untilLiveOnly } from './restart-wait.ts';

const GATEWAY_MAIN = fileURLToPath(new URL('../../gateway/src/main.ts', import.meta.url));
const RUNNER_MAIN = fileURLToPath(new URL('../../runner/src/main.ts', import.meta.url));
// The kernel launcher built by services/kernel-sandbox/scripts/build.sh (toolchain.sh runs it).
const JAIL =
  process.env.ISLET_JAIL_PATH ??
  fileURLToPath(new URL('../../kernel-sandbox/build/islet-jail', import.meta.url));

/** A dev Redis is bounded: one tenant's flood fails writes (noeviction) before the machine swaps. */
const DEV_REDIS_MAX_MEMORY_BYTES = 512 * 1024 * 1024;

interface RunnerSpec {
  modes: SandboxMode[];
  /** ISLET_RUNNER_CONCURRENCY for this runner. Default 4. */
  concurrency?: number;
  /** Extra environment for this runner only (e.g. a host without the kernel launcher). */
  env?: Record<string, string>;
}

export interface ClusterOptions {
  /** Use this Redis instead of starting one. */
  redisUrl?: string;
  /**
   * Use this Redis configuration (e.g. sentinel mode: ISLET_REDIS_MODE, ISLET_REDIS_SENTINELS,
   * ISLET_REDIS_SENTINEL_MASTER, ISLET_REDIS_PASSWORD, ISLET_REDIS_CA_FILE) instead of starting a
   * Redis; every process and the stack's own connection get it.
   */
  redisConfig?: RedisConfig;
  /** `maxmemory` of the Redis this cluster starts, bytes (noeviction: a full Redis refuses writes). Default 512 MiB. */
  redisMaxMemoryBytes?: number;
  /** Gateway processes. Default 1. */
  gateways?: number;
  /** Fixed port of the first gateway (others get free ports). Default: a free port. */
  gatewayPort?: number;
  /**
   * Picks the ports the processes listen on (gateways' public and internal ports, runners'
   * metrics ports). Default: a port free at the time (`freePort`); a process that then finds its
   * port taken is moved to a newly picked one, twice at most.
   */
  pickPort?: () => Promise<number>;
  /** Runner processes. Default: `runnersPerMode` per mode in `modes`. */
  runners?: RunnerSpec[];
  /** Modes for the default runners. Default all three. */
  modes?: SandboxMode[];
  /** Default runners per mode of `modes` (ignored when `runners` is given). Default 1. */
  runnersPerMode?: number;
  /** Extra environment for every process (e.g. ISLET_RUNNER_LOCK_DURATION_MS for tests). */
  env?: Record<string, string>;
  /** Extra environment per gateway, by index (gateways configured differently). */
  gatewayEnv?: Array<Record<string, string>>;
  /** The dev tenant's key text. Default: random. */
  devApiKey?: string;
  /**
   * Turn Code Mode on in the platform settings (a fresh install has it off, as the Code Mode
   * document says; the local stack is for trying it). Default true.
   */
  codeMode?: boolean;
  /** Dev tenant id. Default `dev`. */
  devTenant?: string;
  /** Forward children's output to this process's stderr. Default false (kept for diagnostics). */
  verbose?: boolean;
  /** Log level of the children. Default `warn`. */
  logLevel?: string;
  /** How long a child may take to print its ready line (a loaded machine boots slowly). Default 30 s. */
  readyTimeoutMs?: number;
}

export interface Cluster {
  gatewayUrls: string[];
  /** The first gateway's URL. */
  url: string;
  redisUrl: string;
  /**
   * The Redis configuration every process got (any mode; secrets by value, for tests: the
   * processes get them as `_FILE`). `createRedis(cluster.redisConfig)` reaches the same Redis.
   */
  redisConfig: RedisConfig;
  /** The redis-server this cluster started (undefined when `redisUrl` was given). */
  redis: RedisServer | undefined;
  tenantId: string;
  /** Whether this stack turned Code Mode on (ClusterOptions.codeMode). */
  codeModeEnabled: boolean;
  /** The dev tenant's key; it has every scope, including platform.admin. */
  devKey: string;
  adminKey: string;
  /**
   * The configuration every process got (seal keys, internal token, Redis URL, ISLET_WORKSPACE_ROOT…),
   * secrets by value for tests. The processes themselves get each secret as `X_FILE` (a 0600 file in
   * a private 0700 directory, removed by stop()), never in their environment.
   */
  env: Record<string, string>;
  gateways: ProcessInfo[];
  runners: ProcessInfo[];
  killRunner(i: number, signal?: NodeJS.Signals): Promise<void>;
  /**
   * Kills runner `i` (SIGKILL: a crash) and starts it again; resolves once it is ready and no idle
   * registration the killed process left can be handed a submit (restart-wait.ts).
   */
  restartRunner(i: number): Promise<void>;
  killGateway(i: number, signal?: NodeJS.Signals): Promise<void>;
  restartGateway(i: number): Promise<void>;
  /** Last output lines of a child (for test failure messages). */
  output(kind: 'gateway' | 'runner', i: number): string;
  stop(): Promise<void>;
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const redisServer =
    options.redisUrl || options.redisConfig
      ? undefined
      : await startRedis({
          appendFsync: 'always', // a journaled call survives a Redis crash
          maxMemoryBytes: options.redisMaxMemoryBytes ?? DEV_REDIS_MAX_MEMORY_BYTES,
        });
  // From here on a failure must stop what was started (Redis, children) and remove the temp dirs.
  const cleanups: (() => Promise<void> | void)[] = [() => redisServer?.stop()];
  const cleanUp = async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  try {
    return await startClusterProcesses(options, redisServer, cleanups, cleanUp);
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

async function startClusterProcesses(
  options: ClusterOptions,
  redisServer: RedisServer | undefined,
  cleanups: (() => Promise<void> | void)[],
  cleanUp: () => Promise<void>,
): Promise<Cluster> {
  const redisConfig: RedisConfig = options.redisConfig ?? {
    ISLET_REDIS_URL: options.redisUrl ?? redisServer!.url,
  };
  const redisUrl = redisConfig.ISLET_REDIS_URL;
  const redisEnv = Object.fromEntries(
    Object.entries(redisConfig).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  // Secrets reach the children as files only, in a directory only root (this user) can enter.
  const secretDir = mkdtempSync(join(tmpdir(), 'islet-secrets-'));
  chmodSync(secretDir, 0o700);
  cleanups.push(() => rmSync(secretDir, { recursive: true, force: true }));
  // Session workspaces: one directory for the gateways' file routes and the runners' files
  // bindings and skills (a shared volume in Kubernetes). Removed by stop() when created here.
  const ownWorkspaceRoot = options.env?.ISLET_WORKSPACE_ROOT
    ? undefined
    : mkdtempSync(join(tmpdir(), 'islet-workspaces-'));
  // mkdtemp makes it 0700; skill programs run as other uids and must be able to reach their workspace.
  if (ownWorkspaceRoot) {
    chmodSync(ownWorkspaceRoot, 0o755);
    cleanups.push(() => rmSync(ownWorkspaceRoot, { recursive: true, force: true }));
  }
  const env: Record<string, string> = {
    ...(ownWorkspaceRoot ? { ISLET_WORKSPACE_ROOT: ownWorkspaceRoot } : {}),
    ...redisEnv,
    ISLET_SEAL_KEYS: generateSealKey('dev1'),
    ISLET_INTERNAL_TOKEN: randomBytes(24).toString('base64url'),
    ISLET_JOURNAL_ARGS_KEY: randomBytes(32).toString('base64url'),
    ISLET_LOG_LEVEL: options.logLevel ?? 'warn',
    ISLET_HOST: '127.0.0.1',
    // Sandbox hosts run under the kernel launcher whenever it is built here.
    ISLET_SANDBOX_JAIL: existsSync(JAIL) ? 'on' : 'off',
    // Apps of a local stack live on this machine.
    ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true',
    // Served over plain http on loopback: the board's cookie cannot be Secure there.
    ISLET_DEV_PLAIN_HTTP: 'true',
    ...options.env,
  };
  // What the processes get: every secret of `env` as a file, and nothing secret inherited.
  const processEnv = { ...inheritedEnv(), ...secretsToFiles(env, secretDir) };

  const pickPort = options.pickPort ?? freePort;
  const gatewayCount = options.gateways ?? 1;
  const gateways: Child[] = [];
  for (let i = 0; i < gatewayCount; i++) {
    const port = i === 0 && options.gatewayPort ? options.gatewayPort : await pickPort();
    // The runner channel on its own port, as in production (no public route reaches it).
    const internalPort = await pickPort();
    gateways.push({
      info: {
        kind: 'gateway',
        index: i,
        url: `http://127.0.0.1:${port}`,
        port,
        internalUrl: `http://127.0.0.1:${internalPort}`,
        pid: undefined,
        alive: false,
      },
      env: {
        ...processEnv,
        ...options.gatewayEnv?.[i],
        ISLET_PORT: String(port),
        ISLET_INTERNAL_PORT: String(internalPort),
      },
      script: GATEWAY_MAIN,
      lines: [],
    });
  }
  const perMode = options.runnersPerMode ?? 1;
  if (!(Number.isInteger(perMode) && perMode >= 1)) throw new Error(`runnersPerMode: ${perMode}`);
  const specs: RunnerSpec[] =
    options.runners ??
    (options.modes ?? ['read-only', 'workspace-write', 'danger-full-access']).flatMap((m) =>
      Array.from({ length: perMode }, (): RunnerSpec => ({ modes: [m] })),
    );
  const runners: Child[] = [];
  for (const [i, spec] of specs.entries()) {
    const port = await pickPort();
    runners.push({
      info: {
        kind: 'runner',
        index: i,
        url: `http://127.0.0.1:${port}`,
        port,
        pid: undefined,
        alive: false,
        modes: spec.modes,
      },
      env: {
        ...processEnv,
        ISLET_RUNNER_MODES: spec.modes.join(','),
        ISLET_RUNNER_CONCURRENCY: String(spec.concurrency ?? env.ISLET_RUNNER_CONCURRENCY ?? 4),
        ISLET_RUNNER_METRICS_PORT: String(port),
        ...spec.env,
      },
      script: RUNNER_MAIN,
      lines: [],
    });
  }

  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const launch = (child: Child) => launchChild(child, { readyTimeoutMs, verbose: options.verbose });

  const launchOnFreePorts = (child: Child) =>
    relaunchOnFreePorts(child, launch, pickPort, Boolean(options.gatewayPort));

  // The whole group: a runner's sandbox hosts end with it.
  const kill = (child: Child | undefined, signal: NodeJS.Signals = 'SIGKILL') =>
    stopOwned(child?.proc, signal);

  const all = [...gateways, ...runners];
  cleanups.push(() => Promise.all(all.map((c) => kill(c))).then(() => {}));
  // Gateways first: runners send binding calls to them. allSettled: a failure stops the others
  // only after every launch has ended, so none is started after the clean-up.
  const settle = async (children: Child[]) => {
    const failed = (await Promise.allSettled(children.map(launchOnFreePorts))).find(
      (r) => r.status === 'rejected',
    );
    if (failed) throw failed.reason;
  };
  await settle(gateways);
  // Known only now: a gateway that lost its port to another process was moved to a new one.
  const gatewayUrls = gateways.map((g) => g.info.url);
  const internalUrls = gateways.map((g) => g.info.internalUrl!);
  for (const [i, r] of runners.entries())
    if (specs[i]?.env?.ISLET_GATEWAY_URLS === undefined) r.env.ISLET_GATEWAY_URLS = internalUrls.join(',');
  await settle(runners);

  const redis = createRedis(redisConfig);
  const tenants = createTenantStore(redis);
  const tenantId = options.devTenant ?? 'dev';
  if (!(await tenants.getTenant(tenantId))) await tenants.createTenant({ id: tenantId, name: 'Development' });
  const devKey = (
    await tenants.createKey(tenantId, [...SCOPES], options.devApiKey ? { key: options.devApiKey } : {})
  ).key;
  const codeModeEnabled = options.codeMode ?? true;
  if (codeModeEnabled) {
    const settings = createSettingsStore(redis);
    const current = await settings.get();
    if (!current.codeMode.enabled) await settings.update(current.version, { enabled: true });
  }
  redis.disconnect();

  return {
    gatewayUrls,
    url: gatewayUrls[0]!,
    redisUrl,
    redisConfig,
    redis: redisServer,
    tenantId,
    codeModeEnabled,
    devKey,
    adminKey: devKey,
    env,
    gateways: gateways.map((g) => g.info),
    runners: runners.map((r) => r.info),
    killRunner: (i, signal) => kill(runners[i], signal),
    restartRunner: async (i) => {
      await kill(runners[i]);
      // Resolved once a submit cannot be handed to the killed process's registration (restart-wait.ts).
      const left = await idleSnapshot(redisConfig, runners[i]!.info.modes ?? []);
      await launch(runners[i]!);
      await untilLiveOnly(redisConfig, left);
    },
    killGateway: (i, signal) => kill(gateways[i], signal),
    restartGateway: async (i) => {
      await kill(gateways[i]);
      await launch(gateways[i]!);
    },
    output: (kind, i) => ((kind === 'gateway' ? gateways : runners)[i]?.lines ?? []).join('\n'),
    async stop() {
      // Runners drain first (SIGTERM), then gateways, then Redis and the temp directories.
      await Promise.all(runners.map((r) => kill(r, 'SIGTERM')));
      await Promise.all(gateways.map((g) => kill(g, 'SIGTERM')));
      await cleanUp();
    },
  };
}
