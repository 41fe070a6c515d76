/**
 * The gateway app's platform settings (a stale expectedVersion is a 409) and connections with the
 * code-api declarations generated from them, through inject on real Redis. The shared set-up is
 * test/app-fixture.ts.
 */
import { describe, expect, it } from 'vitest';
import { auth, expectProblem, onAppFixture } from '../test/app-fixture.ts';
import { declareBindings, schemaToTs } from './code-api.ts';
import { slugify } from './connections.ts';

const { app, key, otherKey, adminKey } = await onAppFixture();

describe('settings', () => {
  it('PATCH with a stale expectedVersion is a 409', async () => {
    const cur = (
      await app.inject({ method: 'GET', url: '/v1/platform/settings', headers: auth(key) })
    ).json();
    const ok = await app.inject({
      method: 'PATCH',
      url: '/v1/platform/settings',
      headers: auth(adminKey),
      payload: {
        expectedVersion: cur.version,
        codeMode: { timeoutMs: 30000, memoryMb: 64, outputBytes: 65536 },
      },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      version: cur.version + 1,
      codeMode: { enabled: false, timeoutMs: 30000 }, // off on a fresh install (document 003)
    });
    const stale = await app.inject({
      method: 'PATCH',
      url: '/v1/platform/settings',
      headers: auth(adminKey),
      payload: { expectedVersion: cur.version, codeMode: { enabled: false } },
    });
    const p = expectProblem(stale, 409, 'version-conflict');
    expect((p as unknown as { currentVersion: number }).currentVersion).toBe(cur.version + 1);
  });
});

describe('connections and code-api', () => {
  it('registers a connection and generates declarations from JSON Schema', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth(key),
      payload: {
        name: 'Work calendar',
        kind: 'http',
        url: 'http://127.0.0.1:1/app',
        tools: [
          {
            name: 'list-events',
            description: 'List the events of a day',
            inputSchema: {
              type: 'object',
              properties: { day: { type: 'string', description: 'ISO date' } },
              required: ['day'],
            },
            outputSchema: {
              type: 'object',
              properties: {
                events: {
                  type: 'array',
                  items: { type: 'object', properties: { title: { type: 'string' } } },
                },
              },
            },
          },
          {
            name: 'send_invite',
            policy: 'ask',
            inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
          },
        ],
        resources: [{ name: 'calendars' }],
      },
    });
    expect(res.statusCode).toBe(201);
    const c = res.json();
    expect(c.slug).toBe('work_calendar');
    expect(c.bindings).toEqual([
      'apps.work_calendar.list_events',
      'apps.work_calendar.send_invite',
      'apps.work_calendar.calendars',
    ]);
    const dup = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth(key),
      payload: { name: 'work-calendar', kind: 'client' },
    });
    expectProblem(dup, 409, 'conflict');

    const api = await app.inject({ method: 'GET', url: '/v1/code-api?q=events', headers: auth(key) });
    const body = api.json();
    expect(body.bindings.map((b: { binding: string }) => b.binding)).toEqual(['work_calendar.list_events']);
    expect(body.declarations).toContain('namespace work_calendar');
    expect(body.declarations).toContain('function list_events(args: {');
    expect(body.declarations).toContain('day: string;');
    expect(body.declarations).toContain('Promise<{');
    // The declarations are valid TypeScript (parsed by the compiler itself).
    const ts = (await import('typescript')).default;
    const all = (await app.inject({ method: 'GET', url: '/v1/code-api', headers: auth(key) })).json()
      .declarations as string;
    const file = ts.createSourceFile('apps.d.ts', all, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    expect((file as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics).toEqual([]);
    const byConn = await app.inject({
      method: 'GET',
      url: `/v1/code-api?connection=${c.id}`,
      headers: auth(key),
    });
    expect(byConn.json().bindings).toHaveLength(3);
    const otherTenant = await app.inject({ method: 'GET', url: '/v1/code-api', headers: auth(otherKey) });
    // Another tenant sees none of acme's connections, only the built-in files.* bindings.
    expect(otherTenant.json().bindings.map((b: { binding: string }) => b.binding)).toEqual([
      'files.read',
      'files.write',
      'files.list',
      'files.remove',
    ]);
    expectProblem(
      await app.inject({ method: 'GET', url: `/v1/connections/${c.id}`, headers: auth(otherKey) }),
      404,
      'not-found',
    );
    expectProblem(
      await app.inject({ method: 'DELETE', url: `/v1/connections/${c.id}`, headers: auth(otherKey) }),
      404,
      'not-found',
    );
  });
  it('slugs and schema rendering', () => {
    expect(slugify('Work calendar')).toBe('work_calendar');
    expect(slugify('list-events')).toBe('list_events');
    expect(slugify('3D Printer!')).toBe('_3d_printer');
    expect(schemaToTs({ type: 'array', items: { enum: ['a', 'b'] } })).toBe('Array<"a" | "b">');
    expect(schemaToTs({ type: ['string', 'null'] })).toBe('string | null');
    expect(declareBindings([]).declarations).toContain('function call(name: string');
  });
});
