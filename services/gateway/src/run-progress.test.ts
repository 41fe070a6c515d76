/**
 * A run's progress (its start, binding calls, printed output) is published on
 * `islet:run-progress`, which a gateway subscribes to only while one of its SSE streams listens:
 * a gateway serving only `Prefer: wait` submits is woken by a run's end, not by its start. Real
 * gateway deps and Redis; the run is driven through the run store, lifecycle and journal as a
 * runner drives it. What each gateway heard is read from its hub's listeners (the messages its
 * subscriber dispatched) and from Redis (`PUBSUB NUMSUB`), never from timing.
 */
import type { AddressInfo } from 'node:net';
import { channels, keys } from '@islet/core';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp, type TestGatewayDeps } from '../test/gateway-harness.ts';

let gateway: GatewayAppUnderTest;
let app: FastifyInstance;
let deps: TestGatewayDeps;
let observer: Redis;
let base: string;
let key: string;
/** Every run message Redis published, as `<channel> <message>` (the end's payload cut off). */
const published: string[] = [];
const auth = (k: string) => ({ authorization: `Bearer ${k}` });

beforeAll(async () => {
  gateway = await startGatewayApp();
  ({ app, deps } = gateway);
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
  observer = deps.redis.duplicate();
  observer.on('pmessage', (_p: string, channel: string, message: string) => {
    const cut = Math.max(message.indexOf(' end2 '), message.indexOf(' end3 '));
    published.push(`${channel} ${cut < 0 ? message : message.slice(0, cut + 5)}`);
  });
  await observer.psubscribe('islet:run-*');
});

afterAll(async () => {
  observer?.disconnect();
  await gateway?.close();
});

const numsub = async (channel: string) =>
  Number(((await deps.redis.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]);

async function until<T>(read: () => Promise<T> | T, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 250; i++) {
    const v = await read();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition never held');
}

/** The id of the session's only run, once stored. */
async function runIn(session: string): Promise<string> {
  const ids = await until(
    () => deps.redis.zrange(keys.sessionRuns('acme', session), 0, -1),
    (v) => v.length > 0,
  );
  return ids[0] as string;
}

/** A runner's part: the attempt's start, a binding call's event, a printed line, the end. */
async function drive(id: string) {
  const begun = await deps.lifecycle.beginAttempt(id);
  if (begun.attempt !== 1) throw new Error(`not begun: ${String(begun.attempt)}`);
  const call = { index: 0, binding: 'notes.read', argsJson: '{}' };
  expect((await deps.journal.claim(id, 1, call)).kind).toBe('new');
  await deps.journal.markSent(id, 0);
  await deps.journal.complete(
    id,
    0,
    { type: 'result', valueJson: '1' },
    deps.runs.callEvent(id, { index: 0, binding: 'notes.read' }),
  );
  await deps.runs.appendEvent(id, 'log', { lines: [{ level: 'log', text: 'hi' }], attempt: 1 }, 'log');
  const run = await deps.runs.get(id);
  if (!run) throw new Error('run gone');
  await deps.runs.finish(run, {
    status: 'Completed',
    result: { _tag: 'Completed', value: 1, logs: [{ level: 'log', text: 'hi' }] },
    text: '1',
    kind: 'none',
  });
}

describe('run progress on its own channel', () => {
  it("a gateway without an SSE stream hears a run's end, not its start, calls or output; its waiter answers", async () => {
    expect(await numsub(channels.runProgress)).toBe(0);
    expect(await numsub(channels.runEvents)).toBe(1);
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10' },
      payload: { code: 'return 1', description: 'Return one', sessionId: 'quiet-1' },
    });
    const id = await runIn('quiet-1');
    const heard: string[] = [];
    const off = deps.hub.listen(id, (tag) => heard.push(tag ?? 'bare'));
    try {
      await drive(id);
      const res = await answer;
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id, status: 'Completed', result: { value: 1 } });
      // This gateway's subscriber dispatched the end only (the end answered the waiter): `end2`,
      // one small call being under `end3`'s floor (round 43 `format-43`).
      expect(heard).toEqual(['end2']);
      await until(
        () => published.filter((m) => m.includes(id)).length,
        (n) => n >= 3,
      );
      // Redis published the calls' and output's progress where nobody listened, and the end where
      // the waiter did; the start of a run no stream could follow (created `unwatched`) not at all.
      expect(published.filter((m) => m.includes(id))).toEqual([
        `${channels.runProgress} ${id} call`,
        `${channels.runProgress} ${id} log`,
        `${channels.runEvents} ${id} end2`,
      ]);
      expect(deps.hub.onDemandState().progress).toEqual({ listeners: 0, subscribes: 0 });
    } finally {
      off();
    }
  });

  it('an open run event stream follows progress: woken by start, call and output, in order, and leaves when it ends', async () => {
    const submitted = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(key),
      payload: { code: 'return 1', description: 'Return one', sessionId: 'live-1' },
    });
    expect(submitted.statusCode).toBe(202);
    const id = submitted.json().id as string;
    const res = await fetch(`${base}/v1/code-runs/${id}/events`, { headers: auth(key) });
    expect(res.status).toBe(200);
    const text = res.text();
    // The stream's SUBSCRIBE landed before its first read.
    await until(
      () => deps.hub.onDemandState().progress.listeners,
      (n) => n === 1,
    );
    expect(await numsub(channels.runProgress)).toBe(1);
    const heard: string[] = [];
    const off = deps.hub.listen(id, (tag) => heard.push(tag ?? 'bare'));
    try {
      await drive(id);
      const events = [...(await text).matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
      expect(events).toEqual(['status', 'status', 'call', 'log', 'end']);
      // A run nobody waits on ends with its bare id. The stream may have ended by its own read of
      // the run's events (another connection) before the subscriber's message is dispatched here.
      await until(
        () => heard.length,
        (n) => n >= 4,
      );
      expect(heard).toEqual(['running', 'call', 'log', 'bare']);
      // The stream ended with the run's end and gave the channel up.
      await until(
        () => numsub(channels.runProgress),
        (n) => n === 0,
      );
      expect(deps.hub.onDemandState().progress).toEqual({ listeners: 0, subscribes: 1 });
    } finally {
      off();
    }
  });
});
