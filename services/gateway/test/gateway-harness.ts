/**
 * Shared set-up of the gateway's tests on real Redis: a redis-server of their own, a config with a
 * fresh seal key, the gateway's deps and (for most) the app over them. A test file starts one in
 * `beforeAll` and closes it in `afterAll`; `close` stops what it started, last first, and is safe to
 * call when the start failed half-way.
 */
import { channels, createLogger, generateSealKey, type IsletConfig, loadConfig } from '@islet/core';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { createGatewayDeps } from '../src/create-deps.ts';

export type TestGatewayDeps = Awaited<ReturnType<typeof createGatewayDeps>>;

/** The gateway's config on `redisUrl` with a fresh seal key, plus `env`. */
export function gatewayTestConfig(redisUrl: string, env: Record<string, string> = {}): IsletConfig {
  return loadConfig({
    ISLET_REDIS_URL: redisUrl,
    ISLET_SEAL_KEYS: generateSealKey(),
    ISLET_INTERNAL_TOKEN: 'internal-token-for-tests',
    // Any gateway suite runs under format 1 when the environment names it (the default is 2:
    // `ISLET_WRITE_FORMAT=1 npx vitest run …`; test/bench/README.md, rounds 40 `format-two`, 41).
    ...(process.env.ISLET_WRITE_FORMAT ? { ISLET_WRITE_FORMAT: process.env.ISLET_WRITE_FORMAT } : {}),
    ...env,
  });
}

/** A silent logger for deps a test makes besides the harness's. */
export const testLogger = () => createLogger({ name: 'test', level: 'silent' });

export interface GatewayDepsUnderTest {
  server: RedisServer;
  config: IsletConfig;
  deps: TestGatewayDeps;
  close(): Promise<void>;
}

export interface GatewayAppUnderTest extends GatewayDepsUnderTest {
  app: FastifyInstance;
}

/** What `make` returns; if it throws, `undo` runs first (what was started so far is stopped). */
async function orUndo<T>(make: () => Promise<T>, undo: () => Promise<void>): Promise<T> {
  try {
    return await make();
  } catch (err) {
    await undo();
    throw err;
  }
}

/**
 * A redis-server (without AOF; `redis` over that, e.g. a maxmemory), the config on it (fresh seal
 * key, plus `env`) and the gateway's deps.
 */
export async function startGatewayDeps(
  env: Record<string, string> = {},
  redis: Parameters<typeof startRedis>[0] = {},
): Promise<GatewayDepsUnderTest> {
  const server = await startRedis({ appendOnly: false, ...redis });
  const config = await orUndo(
    async () => gatewayTestConfig(server.url, env),
    () => server.stop(),
  );
  const deps = await orUndo(
    () => createGatewayDeps(config, testLogger()),
    () => server.stop(),
  );
  const close = async () => {
    await deps.close();
    await server.stop();
  };
  return { server, config, deps, close };
}

/**
 * As `startGatewayDeps`, and the app built over the deps (not listening; `app` is buildApp's
 * options). `prepare` runs on the deps before the app is built: what the app takes from its deps
 * at build (a fake `postToApp`) must be set there.
 */
export async function startGatewayApp(
  options: {
    env?: Record<string, string>;
    redis?: Parameters<typeof startRedis>[0];
    app?: Parameters<typeof buildApp>[1];
    prepare?: (deps: TestGatewayDeps) => void;
  } = {},
): Promise<GatewayAppUnderTest> {
  const started = await startGatewayDeps(options.env, options.redis);
  options.prepare?.(started.deps);
  const app = await orUndo(() => buildApp(started.deps, options.app), started.close);
  const close = async () => {
    await app.close();
    await started.close();
  };
  return { ...started, app, close };
}

/** One gateway of `startGateways`: its deps and its app (built, not listening). */
export interface GatewayReplica {
  deps: TestGatewayDeps;
  app: FastifyInstance;
}

export interface GatewaysUnderTest {
  server: RedisServer;
  /** Every gateway `add` made, in order. */
  gateways: GatewayReplica[];
  /**
   * One more gateway on the server: the config is the file's `env`, then this one's `env`, over
   * `gatewayTestConfig`'s; `prepare` runs on its deps before its app is built.
   */
  add(options?: {
    env?: Record<string, string>;
    prepare?: (deps: TestGatewayDeps) => void;
  }): Promise<GatewayReplica>;
  /** Closes every app, then every gateway's deps, then stops the server. */
  close(): Promise<void>;
}

/**
 * A redis-server of the file's own and any number of gateways on it (replicas, or gateways of
 * different settings), all with one seal key (what one seals another opens) unless `env` names
 * another. For one gateway `startGatewayApp` is shorter.
 */
export async function startGateways(
  options: { env?: Record<string, string>; redis?: Parameters<typeof startRedis>[0] } = {},
): Promise<GatewaysUnderTest> {
  const server = await startRedis({ appendOnly: false, ...options.redis });
  const env = { ISLET_SEAL_KEYS: generateSealKey(), ...options.env };
  const gateways: GatewayReplica[] = [];
  const made: TestGatewayDeps[] = [];
  return {
    server,
    gateways,
    async add(one = {}) {
      const deps = await createGatewayDeps(
        gatewayTestConfig(server.url, { ...env, ...one.env }),
        testLogger(),
      );
      made.push(deps);
      one.prepare?.(deps);
      const replica = { deps, app: await buildApp(deps) };
      gateways.push(replica);
      return replica;
    },
    async close() {
      for (const { app } of gateways) await app.close();
      for (const deps of made) await deps.close();
      await server.stop();
    },
  };
}

/** A `client` connection of `tenant` (the user's device) with one allowed tool, `ask_user`; its id. */
export async function clientConnection(
  deps: TestGatewayDeps,
  tenant: string,
  name = 'Phone',
): Promise<string> {
  const made = await deps.connections.create(tenant, {
    name,
    kind: 'client',
    tools: [{ name: 'ask_user', inputSchema: {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!made.ok) throw new Error(made.detail);
  return made.connection.id;
}

/**
 * A runner's binding call (`POST /internal/v1/code-runs/<runId>/calls` with `token`) on the run's
 * next attempt, through inject: the response, its status not checked (the caller asserts it).
 */
export async function injectCall(
  gateway: { app: FastifyInstance; deps: TestGatewayDeps },
  token: string,
  runId: string,
  call: { index: number; binding: string; argsJson: string },
) {
  return gateway.app.inject({
    method: 'POST',
    url: `/internal/v1/code-runs/${runId}/calls`,
    headers: { authorization: `Bearer ${token}` },
    payload: { attempt: await gateway.deps.journal.nextAttempt(runId), ...call },
  });
}

/**
 * A tenant with one http connection of one allowed tool (`app.<tool>`, an empty schema) and a run
 * of `runId` bound to it, stored: what `createBindingCalls(deps).serve` needs to serve its calls.
 */
export async function toolRun(
  deps: TestGatewayDeps,
  opts: { tenant: string; connectionName: string; tool: string; runId: string },
): Promise<{ connectionId: string; binding: string }> {
  const { tenant, connectionName, tool, runId } = opts;
  await deps.tenants.createTenant({ id: tenant, name: tenant });
  const made = await deps.connections.create(tenant, {
    name: connectionName,
    kind: 'http',
    url: 'http://app.example/',
    tools: [{ name: tool, inputSchema: {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!made.ok) throw new Error(made.detail);
  const connectionId = made.connection.id;
  const binding = `app.${tool}`;
  await deps.runs.create(
    runFixture(runId, {
      tenant,
      request: {
        connections: [connectionId],
        bindings: [{ binding, connectionId, connectionName, name: tool, kind: 'tool' }],
      },
    }) as never,
  );
  return { connectionId, binding };
}

/** A run's end as a test ends it from outside (`runs.finish(run, endedByTest())`): Cancelled, kind abort. */
export function endedByTest() {
  return {
    status: 'Cancelled' as const,
    result: {
      _tag: 'Failed' as const,
      reason: 'Cancelled' as const,
      kind: 'abort' as const,
      message: 'ended by the test',
      logs: [],
    },
    text: 'code run failed (abort): ended by the test',
    kind: 'abort',
  };
}

/**
 * Every message on the run-events channel (a waited run's pushed end among them) pushed into
 * `into`, heard on a connection of its own; disconnect it after.
 */
export async function listenRunEvents(redis: TestGatewayDeps['redis'], into: string[]) {
  const sub = redis.duplicate();
  sub.on('message', (_channel: string, message: string) => into.push(message));
  await sub.subscribe(channels.runEvents);
  return sub;
}
