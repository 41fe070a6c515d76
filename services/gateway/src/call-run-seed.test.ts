/**
 * A run this gateway admitted is kept for its binding calls from its submit (call-run-cache.ts):
 * its first call reads no record from Redis, and the App gets the same request a replica that
 * reads the record makes (real Redis, two gateways on it, a real App listener, MONITOR). The
 * call's script replies are read off the gateway's Redis socket through `onread` (round 42).
 */
import { createServer, type Server } from 'node:http';
import { Socket } from 'node:net';
import { channels, createRedis, keys } from '@islet/core';
import { operationIdFor } from '@islet/runs';
import { countStreamPushes } from '@islet/testkit';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayReplica, type GatewaysUnderTest, startGateways } from '../test/gateway-harness.ts';

const INTERNAL = 'internal-token-for-seed-tests';
let fleet: GatewaysUnderTest | undefined;
let monitor: Redis | undefined;
let server: Server;
let base: string;
let auth: Record<string, string>;
let gateways: GatewayReplica[] = [];
const seen: string[] = [];
/** Every command Redis ran, as `name key` (MONITOR). */
const commands: string[] = [];

beforeAll(async () => {
  fleet = await startGateways({
    env: { ISLET_INTERNAL_TOKEN: INTERNAL, ISLET_APP_ALLOW_PRIVATE_NETWORKS: 'true' },
  });
  // Two replicas on one Redis: the first admits every run, the second serves calls it did not admit.
  const first = await fleet.add();
  await fleet.add();
  gateways = fleet.gateways;
  await first.deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  auth = { authorization: `Bearer ${(await first.deps.tenants.createKey('acme', ['apps.use'])).key}` };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push(Buffer.concat(chunks).toString());
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  monitor = await createRedis(fleet.server.url).monitor();
  monitor.on('monitor', (_time: string, args: string[]) => {
    commands.push(`${String(args[0]).toLowerCase()} ${args[1] ?? ''}`);
  });
});

afterAll(async () => {
  monitor?.disconnect();
  await fleet?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

const admitting = () => gateways[0]!;
const replica = () => gateways[1]!;

let made: Promise<{ id: string; slug: string }> | undefined;
/** The tests' one connection (a name is a tenant's once). */
function connection(): Promise<{ id: string; slug: string }> {
  made ??= makeConnection();
  return made;
}

async function makeConnection(): Promise<{ id: string; slug: string }> {
  const res = await admitting().app.inject({
    method: 'POST',
    url: '/v1/connections',
    headers: auth,
    payload: { name: 'Seed', kind: 'http', url: `${base}/app`, tools: [{ name: 'ping' }] },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; slug: string };
}

async function submit(connections: string[]): Promise<string> {
  const res = await admitting().app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth,
    payload: { code: 'return 1', description: 'seed test', sessionId: 'seeds', connections },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
}

/** Call 0 of run `id` on `on`; the App's body and the commands Redis ran on the run's record meanwhile. */
async function callOn(on: FastifyInstance, id: string, slug: string) {
  const attempt = await admitting().deps.journal.nextAttempt(id);
  // MONITOR's feed lags the commands: a PING through it marks where this call's commands begin and end.
  const mark = async () => {
    const token = `mark-${Math.random()}`;
    const probe = createRedis(fleet!.server.url);
    await probe.echo(token);
    probe.disconnect();
    await expect.poll(() => commands.some((c) => c.startsWith('echo') && c.includes(token))).toBe(true);
    return commands.findIndex((c) => c.includes(token));
  };
  const from = await mark();
  const served = await on.inject({
    method: 'POST',
    url: `/internal/v1/code-runs/${id}/calls`,
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { attempt, index: 0, binding: `${slug}.ping`, argsJson: '{"n":1}' },
  });
  expect(served.statusCode, served.body).toBe(200);
  expect(served.json().outcome).toEqual({ type: 'result', valueJson: '{"ok":true}' });
  const to = await mark();
  const record = keys.run(id);
  return {
    body: seen.at(-1)!,
    recordReads: commands.slice(from, to).filter((c) => c.endsWith(` ${record}`) && !c.startsWith('evalsha')),
  };
}

describe('a run admitted here, its binding calls', () => {
  it('read no record: the run is kept from its submit; a replica reads it and sends the same App request', async () => {
    const conn = await connection();
    const here = await submit([conn.id]);
    expect(admitting().deps.callRuns.has(here)).toBe(true);
    const own = await callOn(admitting().app, here, conn.slug);
    expect(own.recordReads).toEqual([]);

    // The same call of a run this replica did not admit: it reads the record (once) and makes the
    // same request, the run's own ids apart.
    const there = await submit([conn.id]);
    expect(replica().deps.callRuns.has(there)).toBe(false);
    const read = await callOn(replica().app, there, conn.slug);
    expect(read.recordReads).toEqual([`hgetall ${keys.run(there)}`]);
    const general = (body: string, id: string) =>
      body.replaceAll(operationIdFor(id, 0), '<operation>').replaceAll(id, '<run>');
    expect(general(read.body, there)).toBe(general(own.body, here));
    expect(JSON.parse(own.body).context).toMatchObject({ tenant: 'acme', run: here, session: 'seeds' });
  });

  it("reads the call's claim and outcome replies off its Redis socket with no stream push (core's readRepliesDirect)", async () => {
    const conn = await connection();
    const id = await submit([conn.id]);
    const socket = (admitting().deps.redis as unknown as { stream: unknown }).stream;
    const counting = countStreamPushes((stream) => stream === socket);
    try {
      // callOn checks the outcome: the claim's and the outcome's script replies were read.
      await callOn(admitting().app, id, conn.slug);
    } finally {
      counting.stop();
    }
    expect(counting.total()).toBe(0);
  });

  it("reads a waiter's end push off its subscriber's socket with no stream push (core's readRepliesDirect)", async () => {
    const publisher = createRedis(fleet!.server.url);
    // The test's own sockets, read when a push comes (the publisher's connects after this).
    const own = (socket: unknown) =>
      [publisher, monitor].some((c) => (c as unknown as { stream: unknown } | undefined)?.stream === socket);
    const runId = 'direct-read-end-push';
    // Pushes on any of the gateways' Redis sockets (the subscribers' among them), the test's aside.
    const counting = countStreamPushes(
      (stream) => stream instanceof Socket && stream.remotePort === fleet!.server.port && !own(stream),
      (stream) => `:${(stream as Socket).localPort}`,
    );
    try {
      // Both replicas' subscribers get it: each heard before counting.
      await Promise.all(gateways.map(({ deps }) => deps.hub.start()));
      const heard = gateways.map(
        ({ deps }) =>
          new Promise<void>((r) => {
            const stop = deps.hub.listen(runId, () => {
              stop();
              r();
            });
          }),
      );
      expect(await publisher.publish(channels.runEvents, runId)).toBeGreaterThanOrEqual(2);
      await Promise.all(heard);
    } finally {
      counting.stop();
      publisher.disconnect();
    }
    expect([...counting.pushed.keys()]).toEqual([]);
  });

  it('keeps no run that names no App', async () => {
    const id = await submit([]);
    expect(admitting().deps.callRuns.has(id)).toBe(false);
  });
});
