/**
 * What the call benches share: a loopback App whose one tool `ping` answers `{"ok":true}`, its
 * connection on a cluster, and the process kinds their traces and CPU splits count by.
 */
import { createServer, type Server } from 'node:http';
import { startCluster } from '@islet/devstack';
import type { Api } from '../e2e/helpers.ts';

/** The App, listening on a free loopback port. */
export async function startPingApp(): Promise<{ app: Server; port: number }> {
  const app = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  return { app, port: (app.address() as { port: number }).port };
}

/**
 * The App's stamps on this process's clock (`performance.now()`, ms), in order: each request's
 * arrival (its `request` event) and its answer written (after `end`). `clear` before a run.
 * A listener of its own, prepended, so the stamp is taken before the App's handler runs.
 */
export function appStamps(app: Server): { arrived: number[]; answered: number[]; clear: () => void } {
  const stamps = {
    arrived: [] as number[],
    answered: [] as number[],
    clear() {
      stamps.arrived = [];
      stamps.answered = [];
    },
  };
  app.prependListener('request', (_req, res) => {
    stamps.arrived.push(performance.now());
    res.once('finish', () => stamps.answered.push(performance.now()));
  });
  return stamps;
}

/** The App's connection (tool `ping`, policy allow) for the caller's tenant; its id. */
export async function pingConnection(a: Api, port: number): Promise<string> {
  const res = await a('POST', '/v1/connections', {
    name: 'Bench',
    kind: 'http',
    url: `http://127.0.0.1:${port}/`,
    tools: [{ name: 'ping', policy: 'allow' }],
  });
  return (res.body as { id: string }).id;
}

/**
 * The call benches' cluster: one gateway, one read-only runner of 4 slots, fair share off (one
 * tenant) and no rate limit (thousands of requests a minute are not what they measure); `env` adds
 * to its processes' settings (e.g. a preload in `NODE_OPTIONS`).
 */
export const startCallCluster = (env: Record<string, string> = {}) =>
  startCluster({
    gateways: 1,
    runners: [{ modes: ['read-only'], concurrency: 4 }],
    env: { ISLET_TENANT_POOL_SHARE: '1', ISLET_RATE_LIMIT_PER_MINUTE: '1000000', ...env },
  });

/**
 * `code` submitted with the App's `connection` (none: undefined) and waited for; its answer's body.
 * Throws unless it Completed.
 */
export async function runWithApp(a: Api, code: string, connection: string | undefined): Promise<unknown> {
  const res = await a(
    'POST',
    '/v1/runs',
    {
      code,
      description: 'Benchmark binding calls',
      sessionId: 'calls',
      ...(connection === undefined ? {} : { connections: [connection] }),
    },
    { prefer: 'wait=30' },
  );
  if ((res.body as { status?: string }).status !== 'Completed')
    throw new Error(`run ended ${JSON.stringify(res.body)}`);
  return res.body;
}

/**
 * A process's kind by its entry point, not by a word: a checkout whose path holds "gateway" (a
 * worktree named for its branch) would count every process as the gateway.
 */
export const processKind = (cmd: string): 'redis' | 'gateway' | 'runner' | 'host' | undefined =>
  cmd.includes('redis-server')
    ? 'redis'
    : cmd.includes('gateway/src/main.ts')
      ? 'gateway'
      : cmd.includes('runner/src/main.ts')
        ? 'runner'
        : cmd.includes('host')
          ? 'host'
          : undefined;
