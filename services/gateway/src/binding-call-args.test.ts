/**
 * A binding call's arguments are parsed once for its argument check, its App request and its
 * `call` event (each parsed `argsJson` again), and a tool's inputSchema is not stringified for its
 * validator's cache key at every call (the connection's cached tool object finds it).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayDepsUnderTest, startGatewayDeps, toolRun } from '../test/gateway-harness.ts';
import { createBindingCalls } from './binding-calls.ts';
import type { Connection } from './connections.ts';

let gateway: GatewayDepsUnderTest;

beforeAll(async () => {
  gateway = await startGatewayDeps();
});

afterAll(async () => {
  await gateway?.close();
});

describe('a binding call’s arguments', () => {
  it('are parsed once a call and its tool’s schema is not stringified a call; the check, request and event unchanged', async () => {
    const deps = gateway.deps;
    const tenant = 'args';
    const runId = 'args-run';
    const { connectionId, binding } = await toolRun(deps, {
      tenant,
      connectionName: 'Args',
      tool: 'put',
      runId,
    });
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
    deps.runs.callEvent = (runId, data, started) => {
      const built = typeof data === 'function' ? data() : data;
      events.push(built);
      return callEvent(runId, built, started);
    };
    const bindingCalls = createBindingCalls(deps);
    const signal = new AbortController().signal;
    const argsOf = (i: number) => JSON.stringify({ n: i, note: `call number ${i}` });
    // Call 0 compiles the tool's validator (the schema walked); the rest find it.
    await bindingCalls.serve(runId, 1, { index: 0, binding, argsJson: argsOf(0) }, signal);
    const readsAfterFirst = schemaReads;
    const parse = vi.spyOn(JSON, 'parse');
    const served = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        bindingCalls.serve(runId, 1, { index: i + 1, binding, argsJson: argsOf(i + 1) }, signal),
      ),
    );
    const bad = await bindingCalls.serve(runId, 1, { index: 21, binding, argsJson: '{"note":"x"}' }, signal);
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
