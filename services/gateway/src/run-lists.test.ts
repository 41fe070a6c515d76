/**
 * `GET /v1/runs` and `GET /v1/sessions` through fastify inject on a real Redis: every filter, the
 * cursor, the walls (tenant, principal, platform admin), bad parameters, and the index kept with
 * the run's own writes (create, end, prune) and the day's usage counted at the end.
 */
import { keys } from '@islet/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';

const k = { ann: '', bob: '', lead: '', platform: '', other: '', noread: '' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

interface Item {
  id: string;
  status: string;
  description: string;
  sessionId: string;
  principal?: string;
  style: string;
  createdAt: number;
  endedAt?: number;
}
type Page = { items: Item[]; nextCursor: string | null };

async function submit(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth(key),
    payload: { code: 'return 1', ...body },
  });
  expect(res.statusCode, res.body).toBe(202);
  return (res.json() as { id: string }).id;
}

async function finish(id: string, status: 'Completed' | 'Failed') {
  const result =
    status === 'Completed'
      ? { _tag: 'Completed' as const, value: 1, logs: [] }
      : {
          _tag: 'Failed' as const,
          reason: 'Error' as const,
          kind: 'exception' as const,
          message: 'x',
          logs: [],
        };
  expect(
    await deps.runs.finish(
      { id, tenant: 'acme' },
      { status, result, text: 'out', kind: status === 'Completed' ? 'none' : 'exception' },
    ),
  ).toBe(true);
}

async function list(key: string, query: string): Promise<Page> {
  const res = await app.inject({ method: 'GET', url: `/v1/runs?${query}`, headers: auth(key) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Page;
}

const ids = { a1: '', a2: '', a3: '', b1: '', o1: '' };

const { app, deps } = await onGatewayApp();

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  await deps.tenants.createTenant({ id: 'other', name: 'Other' });
  const read = ['apps.use', 'sessions.read'] as const;
  k.ann = (await deps.tenants.createKey('acme', [...read], { principal: 'ann' })).key;
  k.bob = (await deps.tenants.createKey('acme', [...read], { principal: 'bob' })).key;
  k.lead = (await deps.tenants.createKey('acme', [...read, 'sessions.admin'], { principal: 'lead' })).key;
  k.platform = (await deps.tenants.createKey('other', [...read, 'platform.admin'], { principal: 'ops' })).key;
  k.other = (await deps.tenants.createKey('other', [...read], { principal: 'ann' })).key;
  k.noread = (await deps.tenants.createKey('acme', ['apps.use'], { principal: 'ann' })).key;
  const enable = await app.inject({
    method: 'PATCH',
    url: '/v1/platform/settings',
    headers: auth(k.platform),
    payload: { expectedVersion: 0, codeMode: { enabled: true } },
  });
  if (enable.statusCode !== 200) {
    const current = (
      await app.inject({ method: 'GET', url: '/v1/platform/settings', headers: auth(k.platform) })
    ).json() as { version: number };
    const again = await app.inject({
      method: 'PATCH',
      url: '/v1/platform/settings',
      headers: auth(k.platform),
      payload: { expectedVersion: current.version, codeMode: { enabled: true } },
    });
    expect(again.statusCode, again.body).toBe(200);
  }
  ids.a1 = await submit(k.ann, { description: 'Fetch the weather in Oslo', sessionId: 'sa' });
  ids.a2 = await submit(k.ann, { description: 'Sum the invoices', sessionId: 'sa', style: 'code-mode' });
  ids.a3 = await submit(k.ann, { description: 'Send the weekly REPORT', sessionId: 'sb' });
  ids.b1 = await submit(k.bob, { description: 'Bob counts sheep', sessionId: 'sc' });
  ids.o1 = await submit(k.other, { description: 'Other tenant weather', sessionId: 'sa' });
  await finish(ids.a1, 'Completed');
  await finish(ids.a2, 'Failed');
  await deps.runIndex.skillStarted('acme', {
    id: 'skill-1',
    description: 'python skill',
    sessionId: 'sb',
    principal: 'ann',
    mode: 'workspace-write',
    createdAt: Date.now(),
  });
  await deps.runIndex.skillEnded('acme', 'skill-1', { status: 'Completed', usage: { outputBytes: 5 } });
});

describe('GET /v1/runs', () => {
  it("lists the principal's own runs newest first, as summaries without code or logs", async () => {
    const page = await list(k.ann, '');
    expect(page.items.map((i) => i.id)).toEqual(['skill-1', ids.a3, ids.a2, ids.a1]);
    expect(page.nextCursor).toBeNull();
    const a1 = page.items.find((i) => i.id === ids.a1);
    expect(a1).toMatchObject({
      status: 'Completed',
      description: 'Fetch the weather in Oslo',
      sessionId: 'sa',
      principal: 'ann',
      style: 'run_code',
    });
    expect(a1?.endedAt).toBeGreaterThanOrEqual(a1?.createdAt ?? 0);
    expect(JSON.stringify(page)).not.toContain('return 1');
    // A run not ended shows its record's live status.
    expect(page.items.find((i) => i.id === ids.a3)?.status).toBe('Running');
  });

  it('never shows another principal or tenant; sessions.admin sees the tenant', async () => {
    expect((await list(k.bob, '')).items.map((i) => i.id)).toEqual([ids.b1]);
    expect((await list(k.bob, 'principal=ann')).items).toEqual([]);
    expect((await list(k.other, '')).items.map((i) => i.id)).toEqual([ids.o1]);
    const all = await list(k.lead, '');
    expect(all.items.map((i) => i.id)).toEqual(['skill-1', ids.b1, ids.a3, ids.a2, ids.a1]);
    expect((await list(k.lead, 'principal=bob')).items.map((i) => i.id)).toEqual([ids.b1]);
    const noScope = await app.inject({ method: 'GET', url: '/v1/runs', headers: auth(k.noread) });
    expect(noScope.statusCode).toBe(403);
  });

  it('lets only a platform admin name another tenant', async () => {
    const page = await list(k.platform, 'tenant=acme&principal=bob');
    expect(page.items.map((i) => i.id)).toEqual([ids.b1]);
    const refused = await app.inject({ method: 'GET', url: '/v1/runs?tenant=other', headers: auth(k.lead) });
    expect(refused.statusCode).toBe(403);
    expect((refused.json() as { parameter: string }).parameter).toBe('tenant');
  });

  it('filters by status (repeatable), session, style, description text and time', async () => {
    const ofIds = (p: Page) => p.items.map((i) => i.id);
    expect(ofIds(await list(k.ann, 'status=Completed'))).toEqual(['skill-1', ids.a1]);
    expect(ofIds(await list(k.ann, 'status=Failed&status=Running'))).toEqual([ids.a3, ids.a2]);
    expect(ofIds(await list(k.ann, 'status=Failed,Completed'))).toEqual(['skill-1', ids.a2, ids.a1]);
    expect(ofIds(await list(k.ann, 'sessionId=sa'))).toEqual([ids.a2, ids.a1]);
    expect(ofIds(await list(k.ann, 'sessionId=sb'))).toEqual(['skill-1', ids.a3]);
    expect(ofIds(await list(k.bob, 'sessionId=sb'))).toEqual([]);
    expect(ofIds(await list(k.ann, 'style=code-mode'))).toEqual([ids.a2]);
    expect(ofIds(await list(k.ann, 'style=skill'))).toEqual(['skill-1']);
    expect(ofIds(await list(k.ann, 'style=run_code'))).toEqual([ids.a3, ids.a1]);
    expect(ofIds(await list(k.ann, 'q=report'))).toEqual([ids.a3]);
    expect(ofIds(await list(k.ann, 'q=weather&sessionId=sa'))).toEqual([ids.a1]);
    const all = (await list(k.ann, '')).items;
    const a2 = all.find((i) => i.id === ids.a2) as Item;
    expect(ofIds(await list(k.ann, `until=${a2.createdAt}`)).every((id) => id !== 'skill-1')).toBe(true);
    expect(ofIds(await list(k.ann, `since=${a2.createdAt}`))).toContain(ids.a2);
    expect(ofIds(await list(k.ann, `since=${new Date(Date.now() + 60_000).toISOString()}`))).toEqual([]);
  });

  it('pages with an opaque cursor, every run once', async () => {
    const seen: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    while (cursor !== null && pages < 10) {
      const page = await list(k.lead, `limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.items.map((i) => i.id));
      cursor = page.nextCursor;
      pages++;
    }
    expect(seen).toEqual(['skill-1', ids.b1, ids.a3, ids.a2, ids.a1]);
    // A cursor keeps its place while newer runs arrive.
    const first = await list(k.lead, 'limit=2');
    const newer = await submit(k.ann, { description: 'A newer run', sessionId: 'sd' });
    const second = await list(k.lead, `limit=2&cursor=${first.nextCursor}`);
    expect(second.items.map((i) => i.id)).toEqual([ids.a3, ids.a2]);
    expect((await list(k.lead, 'limit=1')).items[0]?.id).toBe(newer);
  });

  it('refuses unknown filters and malformed cursors, naming the parameter', async () => {
    const bad: Array<[string, string]> = [
      ['colour=red', 'colour'],
      ['cursor=not-a-cursor!', 'cursor'],
      [`cursor=${Buffer.from('x').toString('base64url')}`, 'cursor'],
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=abc', 'limit'],
      ['status=Done', 'status'],
      ['style=python', 'style'],
      ['since=yesterday', 'since'],
      ['until=2026-13-01', 'until'],
      ['sessionId=a&sessionId=b', 'sessionId'],
    ];
    for (const [query, parameter] of bad) {
      const res = await app.inject({ method: 'GET', url: `/v1/runs?${query}`, headers: auth(k.ann) });
      expect(res.statusCode, query).toBe(400);
      expect(String(res.headers['content-type'])).toContain('application/problem+json');
      const body = res.json() as { parameter: string; detail: string; type: string };
      expect(body.type).toBe('https://islet.dev/problems/validation');
      expect(body.parameter, query).toBe(parameter);
      expect(body.detail).toContain(parameter);
    }
    expect((await list(k.ann, 'limit=200')).items.length).toBeGreaterThan(0);
  });
});

describe('GET /v1/sessions', () => {
  it('lists sessions by last activity with run counts by status, behind the same walls', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(k.ann) });
    expect(res.statusCode).toBe(200);
    const page = res.json() as {
      items: Array<{
        sessionId: string;
        principal: string;
        lastActivity: number;
        runs: Record<string, number>;
      }>;
    };
    const sa = page.items.find((s) => s.sessionId === 'sa');
    expect(sa).toMatchObject({ principal: 'ann', runs: { total: 2, active: 0, Completed: 1, Failed: 1 } });
    const sb = page.items.find((s) => s.sessionId === 'sb');
    expect(sb?.runs).toMatchObject({ total: 2, active: 1, Completed: 1 });
    expect(page.items.some((s) => s.sessionId === 'sc')).toBe(false);
    const times = page.items.map((s) => s.lastActivity);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    const lead = (await app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(k.lead) })).json() as {
      items: Array<{ sessionId: string }>;
    };
    expect(lead.items.map((s) => s.sessionId)).toContain('sc');
    const other = (
      await app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(k.other) })
    ).json() as {
      items: Array<{ sessionId: string; runs: { total: number } }>;
    };
    expect(other.items).toEqual([
      expect.objectContaining({ sessionId: 'sa', runs: expect.objectContaining({ total: 1 }) }),
    ]);
    const bad = await app.inject({ method: 'GET', url: '/v1/sessions?status=x', headers: auth(k.ann) });
    expect(bad.statusCode).toBe(400);
    expect((bad.json() as { parameter: string }).parameter).toBe('status');
  });
});

describe('the index lives with the records', () => {
  it('counts an end once, however many ends race for the run', async () => {
    const id = await submit(k.ann, { description: 'Raced to its end', sessionId: 'se' });
    const ends = await Promise.all([
      deps.runs.finish(
        { id, tenant: 'acme' },
        { status: 'Completed', result: { _tag: 'Completed', value: 1, logs: [] }, text: '', kind: 'none' },
      ),
      app.inject({ method: 'POST', url: `/v1/code-runs/${id}/cancel`, headers: auth(k.ann) }),
    ]);
    void ends;
    const record = (
      await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(k.ann) })
    ).json() as { status: string };
    const item = (await list(k.ann, 'sessionId=se')).items[0];
    expect(item?.status).toBe(record.status);
    const sessions = (
      await app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(k.ann) })
    ).json() as {
      items: Array<{ sessionId: string; runs: Record<string, number> }>;
    };
    const se = sessions.items.find((s) => s.sessionId === 'se');
    expect((se?.runs.Completed ?? 0) + (se?.runs.Cancelled ?? 0)).toBe(1);
  });

  it('drops ended runs past retention as later runs are created', async () => {
    const id = await submit(k.bob, { description: 'Old and gone', sessionId: 'sf' });
    await deps.runs.finish(
      { id, tenant: 'acme' },
      { status: 'Completed', result: { _tag: 'Completed', value: 1, logs: [] }, text: '', kind: 'none' },
    );
    // As if it ended long ago: past any retention (once a read applied the end to the index: ends
    // wait in the tenant's pending list until a read or a later write folds them).
    await list(k.bob, '');
    await deps.redis.zadd(keys.indexRunsEnded('acme'), 1, id);
    await submit(k.bob, { description: 'Newer', sessionId: 'sg' });
    const bobs = (await list(k.bob, '')).items.map((i) => i.id);
    expect(bobs).not.toContain(id);
    expect(await deps.redis.hexists(keys.indexRunSummaries('acme'), id)).toBe(0);
    const sessions = (
      await app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(k.bob) })
    ).json() as {
      items: Array<{ sessionId: string }>;
    };
    expect(sessions.items.map((s) => s.sessionId)).not.toContain('sf');
  });

  it('answers GET /v1/usage per day: sessions.admin its tenant, platform.admin every tenant', async () => {
    const day = new Date().toISOString().slice(0, 10);
    const res = await app.inject({
      method: 'GET',
      url: `/v1/usage?from=${day}&to=${day}`,
      headers: auth(k.lead),
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { items: Array<{ tenant: string; days: Array<Record<string, unknown>> }> };
    expect(body.items.map((i) => i.tenant)).toEqual(['acme']);
    expect(body.items[0]?.days[0]).toMatchObject({ day, runs: { Failed: 1 }, skillRuns: 1 });
    const plain = await app.inject({ method: 'GET', url: '/v1/usage', headers: auth(k.ann) });
    expect(plain.statusCode).toBe(403);
    const all = await app.inject({
      method: 'GET',
      url: `/v1/usage?from=${day}&to=${day}`,
      headers: auth(k.platform),
    });
    expect((all.json() as { items: Array<{ tenant: string }> }).items.map((i) => i.tenant).sort()).toEqual([
      'acme',
      'other',
    ]);
    const cross = await app.inject({ method: 'GET', url: '/v1/usage?tenant=other', headers: auth(k.lead) });
    expect(cross.statusCode).toBe(403);
    for (const [query, parameter] of [
      ['from=2026-1-1', 'from'],
      ['to=tomorrow', 'to'],
      ['from=2020-01-01&to=2026-01-01', 'from'],
      ['window=7', 'window'],
    ] as const) {
      const bad = await app.inject({ method: 'GET', url: `/v1/usage?${query}`, headers: auth(k.lead) });
      expect(bad.statusCode, query).toBe(400);
      expect((bad.json() as { parameter: string }).parameter).toBe(parameter);
    }
  });

  it("counts the day's usage at each end", async () => {
    const day = new Date().toISOString().slice(0, 10);
    const usage = await deps.redis.hgetall(keys.usageDay('acme', day));
    expect(Number(usage['runs:Completed'])).toBeGreaterThanOrEqual(2);
    expect(Number(usage['runs:Failed'])).toBe(1);
    expect(Number(usage.skillRuns)).toBe(1);
    expect(Number(usage.outputBytes)).toBeGreaterThanOrEqual(5);
  });
});
