/**
 * A binding call's arguments are parsed once for its argument check, its App request and its
 * `call` event (each parsed `argsJson` again), and a tool's inputSchema is not stringified for its
 * validator's cache key at every call (the connection's cached tool object finds it).
 */
import { createLogger, generateSealKey, loadConfig } from '@islet/core';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBindingCalls } from './binding-calls.ts';
import type { Connection } from './connections.ts';
import { createGatewayDeps } from './create-deps.ts';

let redis: RedisServer;
let deps: Awaited<ReturnType<typeof createGatewayDeps>>;

beforeAll(async () => {
  redis = await startRedis({ appendOnly: false });
  const config = loadConfig({
    ISLET_REDIS_URL: redis.url,
    ISLET_SEAL_KEYS: generateSealKey(),
    ISLET_INTERNAL_TOKEN: 'internal-token-for-call-args',
  });
  deps = await createGatewayDeps(config, createLogger({ name: 'test', level: 'silent' }));
});

afterAll(async () => {
  await deps?.close();
  await redis?.stop();
});

describe('a binding call’s arguments', () => {
  it('are parsed once a call and its tool’s schema is not stringified a call; the check, request and event unchanged', async () => {
    const tenant = 'args';
    await deps.tenants.createTenant({ id: tenant, name: tenant });
    const made = await deps.connections.create(tenant, {
      name: 'Args',
      kind: 'http',
      url: 'http://app.example/',
      tools: [{ name: 'put', inputSchema: {}, policy: 'allow' }],
      resources: [],
      prompts: [],
    });
    if (!made.ok) throw new Error(made.detail);
    const connectionId = made.connection.id;
    const stored = (await deps.connections.get(tenant, connectionId)) as Connection;
    // The schema's `required` is read whenever the schema is walked (stringified, compiled).
    let schemaReads = 0;
    const inputSchema = {
      type: 'object',
      properties: { n: { type: 'number' }, note: { type: 'string' } },
      get required() {
        schemaReads++;
        return ['n'];
      },
    };
    const tool = { ...(stored.tools[0] as Connection['tools'][number]), inputSchema };
    const connection: Connection = { ...stored, tools: [tool] };
    deps.connections.get = async () => connection;
    const sent: Record<string, unknown>[] = [];
    deps.postToApp = async (_url, _headers, body) => {
      sent.push(JSON.parse(body) as Record<string, unknown>);
      return { status: 200, text: '{"ok":true}' };
    };
    const events: Record<string, unknown>[] = [];
    const callEvent = deps.runs.callEvent.bind(deps.runs);
    deps.runs.callEvent = (runId, data) => {
      events.push(data);
      return callEvent(runId, data);
    };
    const bindingCalls = createBindingCalls(deps);
    const signal = new AbortController().signal;
    const runId = 'args-run';
    await deps.runs.create(
      runFixture(runId, {
        tenant,
        request: {
          connections: [connectionId],
          bindings: [{ binding: 'app.put', connectionId, connectionName: 'Args', name: 'put', kind: 'tool' }],
        },
      }) as never,
    );
    const argsOf = (i: number) => JSON.stringify({ n: i, note: `call number ${i}` });
    // Call 0 compiles the tool's validator (the schema walked); the rest find it.
    await bindingCalls.serve(runId, 1, { index: 0, binding: 'app.put', argsJson: argsOf(0) }, signal);
    const readsAfterFirst = schemaReads;
    const parse = vi.spyOn(JSON, 'parse');
    const served = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        bindingCalls.serve(runId, 1, { index: i + 1, binding: 'app.put', argsJson: argsOf(i + 1) }, signal),
      ),
    );
    const bad = await bindingCalls.serve(
      runId,
      1,
      { index: 21, binding: 'app.put', argsJson: '{"note":"x"}' },
      signal,
    );
    const parsesOfArgs = (i: number) => parse.mock.calls.filter((c) => c[0] === argsOf(i)).length;
    const perCall = Array.from({ length: 20 }, (_, i) => parsesOfArgs(i + 1));
    parse.mockRestore();

    // Once each; the base parsed each call's arguments three times (check, request, event).
    expect(perCall).toEqual(Array(20).fill(1));
    // The schema walked for the first call only; the base stringified it at every call.
    expect(schemaReads).toBe(readsAfterFirst);

    expect(served.map((s) => s?.outcome)).toEqual(
      Array(20).fill({ type: 'result', valueJson: '{"ok":true}' }),
    );
    // The App got each call's own arguments; the events carry them too.
    expect(sent.map((b) => b.arguments)).toEqual(
      Array.from({ length: 21 }, (_, i) => ({ n: i, note: `call number ${i}` })),
    );
    const eventArgs = new Map(events.map((e) => [e.index, e.arguments]));
    for (let i = 0; i <= 20; i++) expect(eventArgs.get(i)).toEqual({ n: i, note: `call number ${i}` });
    // Arguments that do not fit are refused by the cached validator and never sent.
    expect(bad?.outcome).toMatchObject({
      type: 'error',
      details: { reason: 'invalid-arguments', errors: [{ path: 'arguments.n', message: 'is required' }] },
    });
    expect(sent).toHaveLength(21);
    expect(eventArgs.get(21)).toEqual({ note: 'x' });
  });
});
