/**
 * Creates and ends announce the tenant's feed (`islet:tenant-feed`) and a session's new runs
 * (`islet:session-runs`) only while an events stream listens (`@islet/runs`
 * stream-listeners-store.ts). Over real HTTP on a real Redis: with no stream a submit and its end
 * publish only the end on the run's own channel; the tenant and session streams hear every create
 * and end at once (their channel listeners fire); a tenant stream opened mid-run follows the run on
 * its own channel and gets its end; streams opening while runs are submitted miss none.
 */
import type { AddressInfo } from 'node:net';
import { keys } from '@islet/core';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp, type TestGatewayDeps } from '../test/gateway-harness.ts';
import { openSse, type SseStream } from '../test/sse-stream.ts';

let gateway: GatewayAppUnderTest | undefined;
let app: FastifyInstance;
let deps: TestGatewayDeps;
let base: string;
let key = '';
let client: Redis;
let subscriber: Redis;
/** `<channel> <message's first word>` of every message on the three channels, in order. */
const heard: string[] = [];
/** Keys of the hub's listeners the routes registered, and those that fired. */
const listened: string[] = [];
const fired: string[] = [];
const auth = { authorization: '' };

/** An open SSE stream at `path`: events as they arrive, `some(pred)` waits for one. */
function open(path: string): Promise<SseStream> {
  return openSse(`${base}${path}`, auth, true);
}

async function submit(sessionId: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth,
    payload: { code: 'return 1;', description: 'quiet run', sessionId },
  });
  expect(res.statusCode, res.body).toBe(202);
  return (res.json() as { id: string }).id;
}

async function finish(id: string): Promise<void> {
  await deps.runs.finish(
    { id, tenant: 'acme' },
    { status: 'Completed', result: { _tag: 'Completed', value: 1, logs: [] }, text: '', kind: 'none' },
  );
}

/** Everything published before this call has been heard (one server: messages come in order). */
async function allHeard(): Promise<void> {
  const mark = `barrier-${heard.length}-${Math.random()}`;
  await client.publish('islet:tenant-feed', mark);
  await expect.poll(() => heard.includes(`islet:tenant-feed ${mark}`)).toBe(true);
}

/** Wraps the hub's listen calls: each listener's key in `listened`, and in `fired` when it fires. */
function countHubListeners(d: TestGatewayDeps): void {
  const listen = d.hub.listen;
  d.hub.listen = (k, fn) => {
    listened.push(k);
    return listen(k, (...a) => {
      fired.push(k);
      fn(...a);
    });
  };
  const listenFeed = d.hub.listenFeed;
  d.hub.listenFeed = (tenant, fn) =>
    listenFeed(tenant, () => {
      fired.push(`feed:${tenant}`);
      fn();
    });
  const listenSession = d.hub.listenSession;
  d.hub.listenSession = (index, fn) =>
    listenSession(index, () => {
      fired.push(index);
      fn();
    });
}

beforeAll(async () => {
  // What the routes listen to on the hub, and what woke them.
  gateway = await startGatewayApp({ prepare: countHubListeners });
  ({ app, deps } = gateway);
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'], { principal: 'ann' })).key;
  auth.authorization = `Bearer ${key}`;
  client = new Redis(gateway.server.url);
  subscriber = new Redis(gateway.server.url);
  subscriber.on('message', (channel: string, message: string) =>
    heard.push(`${channel} ${message.split(' ')[0]}`),
  );
  await subscriber.subscribe('islet:tenant-feed', 'islet:session-runs', 'islet:run-events');
});

afterAll(async () => {
  client?.disconnect();
  subscriber?.disconnect();
  await gateway?.close();
});

describe('announcements only while a stream listens', () => {
  it('with no stream open, a submit and its end publish only the end, on the run’s own channel', async () => {
    const from = heard.length;
    const id = await submit('s-quiet');
    await finish(id);
    await allHeard();
    expect(heard.slice(from, -1)).toEqual([`islet:run-events ${id}`]);
    expect(await client.hget(keys.run(id), 'quiet')).toBe('1');
  });

  it('the tenant and session streams hear a create and an end at once, through their channels', async () => {
    const feed = await open('/v1/events');
    const session = await open('/v1/sessions/s-loud/events');
    await feed.some((e) => e.event === 'ready');
    await session.some((e) => e.event === 'ready');
    const from = heard.length;
    const id = await submit('s-loud');
    await feed.some((e) => e.event === 'run' && e.data.id === id);
    await session.some((e) => e.event === 'run' && e.data.id === id);
    await finish(id);
    await feed.some((e) => e.event === 'run' && e.data.id === id && e.data.status === 'Completed');
    await session.some((e) => e.event === 'run' && e.data.id === id && e.data.status === 'Completed');
    await allHeard();
    const index = keys.sessionRuns('acme', 's-loud');
    expect(heard.slice(from, -1).sort()).toEqual(
      [
        'islet:tenant-feed acme',
        `islet:session-runs ${index}`,
        `islet:run-events ${id}`,
        'islet:tenant-feed acme',
      ].sort(),
    );
    expect(fired).toContain('feed:acme');
    expect(fired).toContain(index);
    expect(await client.hget(keys.run(id), 'quiet')).toBeNull();
    await feed.close();
    await session.close();
  });

  it('a tenant stream opened mid-run follows the run on its own channel and gets its end', async () => {
    await expect.poll(() => deps.hub.onDemandState().feed.listeners).toBe(0);
    await client.del(keys.tenantFeedListeners('acme'));
    const id = await submit('s-mid');
    expect(await client.hget(keys.run(id), 'quiet')).toBe('1');
    const feed = await open('/v1/events');
    await feed.some((e) => e.event === 'ready');
    // Followed from the mark, before anything was read.
    expect(listened).toContain(id);
    const from = heard.length;
    await finish(id);
    await feed.some((e) => e.event === 'run' && e.data.id === id && e.data.status === 'Completed');
    await allHeard();
    // The end was not announced on the feed; the run's own message woke the stream.
    expect(heard.slice(from, -1)).toEqual([`islet:run-events ${id}`]);
    expect(fired).toContain(id);
    await feed.close();
  });

  it('streams opening while runs are submitted and ended miss no end', async () => {
    await client.del(keys.tenantFeedListeners('acme'));
    const ids: string[] = [];
    const streams = await Promise.all(
      Array.from({ length: 3 }, async (_, i) => {
        for (let n = 0; n < 3; n++) ids.push(await submit(`s-race-${i}`));
        const s = await open('/v1/events');
        for (let n = 0; n < 2; n++) ids.push(await submit(`s-race-${i}`));
        return s;
      }),
    );
    for (const s of streams) await s.some((e) => e.event === 'ready');
    await Promise.all(ids.map(finish));
    for (const s of streams)
      for (const id of ids)
        await s.some((e) => e.event === 'run' && e.data.id === id && e.data.status === 'Completed');
    for (const s of streams) await s.close();
  });
});
