/**
 * `GET /v1/events` over real HTTP on a real Redis: runs appear as they are created and end, only
 * to the principal allowed to see them; decisions arrive with what a person needs to answer them
 * and leave as answered; the stream resumes from Last-Event-ID and is capped per tenant.
 */
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { openSse, type SseStream } from '../test/sse-stream.ts';

let base: string;
const k = { ann: '', bob: '', lead: '' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const STREAMS = 4;

/** An open stream: events as they arrive, `next(pred)` waits for one. */
function open(key: string, lastEventId?: string): Promise<SseStream> {
  return openSse(`${base}/v1/events`, {
    ...auth(key),
    ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
  });
}

async function submit(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth(key),
    payload: { code: 'const r = await apps.mail.send_email({ to: "x" });\nreturn r;', ...body },
  });
  expect(res.statusCode, res.body).toBe(202);
  return (res.json() as { id: string }).id;
}

const { app, deps } = await onGatewayApp({ env: { ISLET_SSE_STREAMS_PER_TENANT: String(STREAMS) } });

beforeAll(async () => {
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  const scopes = ['apps.use', 'sessions.read', 'decisions'] as const;
  k.ann = (await deps.tenants.createKey('acme', [...scopes], { principal: 'ann' })).key;
  k.bob = (await deps.tenants.createKey('acme', [...scopes], { principal: 'bob' })).key;
  k.lead = (await deps.tenants.createKey('acme', [...scopes, 'sessions.admin'], { principal: 'lead' })).key;
});

describe('GET /v1/events', () => {
  it("streams the principal's runs as they are created and end, and nobody else's", async () => {
    const ann = await open(k.ann);
    const lead = await open(k.lead);
    await ann.next((e) => e.event === 'ready');
    await lead.next((e) => e.event === 'ready');
    const bobs = await submit(k.bob, { description: 'Bob run', sessionId: 'sb' });
    const id = await submit(k.ann, { description: 'Ann run', sessionId: 'sa' });
    const created = await ann.next((e) => e.event === 'run');
    expect(created.data).toMatchObject({ id, status: 'Running', description: 'Ann run', principal: 'ann' });
    expect(created.id).toMatch(/^\d+-\d+$/);
    expect(JSON.stringify(created.data)).not.toContain('send_email');
    await deps.runs.finish(
      { id, tenant: 'acme' },
      { status: 'Completed', result: { _tag: 'Completed', value: 1, logs: [] }, text: '', kind: 'none' },
    );
    const ended = await ann.next((e) => e.event === 'run');
    expect(ended.data).toMatchObject({ id, status: 'Completed' });
    expect(ann.events.some((e) => e.data.id === bobs)).toBe(false);
    // sessions.admin sees the tenant's.
    await lead.next((e) => e.event === 'run' && e.data.id === bobs);
    await lead.next((e) => e.event === 'run' && e.data.id === id && e.data.status === 'Completed');
    // Resumes after the creation's id: the end again, nothing before it.
    const again = await open(k.ann, created.id);
    const replayed = await again.next((e) => e.event === 'run');
    expect(replayed.data).toMatchObject({ id, status: 'Completed' });
    for (const s of [ann, lead, again]) await s.close();
  });

  it('brings a decision with the run, tool, code, arguments and deadline, and its answer', async () => {
    const ann = await open(k.ann);
    await ann.next((e) => e.event === 'ready');
    const runId = await submit(k.ann, { description: 'Mail the report', sessionId: 'sd', timeoutMs: 60_000 });
    const run = await deps.runs.get(runId);
    await deps.decisions.request({
      tenant: 'acme',
      mode: 'read-only',
      runId,
      index: 0,
      toolCallId: 'tc',
      code: run?.code ?? '',
      approval: 'hold',
      call: { connectionId: 'conn-9', tool: 'send_email', arguments: { to: 'x' } },
    });
    const asked = await ann.next((e) => e.event === 'decision');
    expect(asked.data).toMatchObject({
      id: `${runId}:0`,
      state: 'pending',
      tool: 'send_email',
      description: 'Mail the report',
      arguments: { to: 'x' },
    });
    expect((asked.data.code as { text: string }).text).toContain('apps.mail.send_email');
    // The run's own budget (60 s from its creation) ends it before the decision would expire.
    expect(asked.data.deadline).toBe((run?.createdAt ?? 0) + 60_000);
    const answered = await deps.decisions.answer('acme', runId, 0, { allow: true, by: 'lead' });
    expect(answered.ok).toBe(true);
    const gone = await ann.next((e) => e.event === 'decision');
    expect(gone.data).toMatchObject({ id: `${runId}:0`, state: 'allowed' });
    await ann.close();
  });

  it('refuses a stream past the tenant cap with 429, and bad resume ids with 400', async () => {
    const open1 = await Promise.all(Array.from({ length: STREAMS }, () => open(k.lead)));
    for (const s of open1) await s.next((e) => e.event === 'ready');
    const over = await fetch(`${base}/v1/events`, { headers: auth(k.lead) });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBeTruthy();
    await over.body?.cancel();
    for (const s of open1) await s.close();
    const bad = await fetch(`${base}/v1/events`, { headers: { ...auth(k.ann), 'last-event-id': 'x' } });
    expect(bad.status).toBe(400);
    await bad.body?.cancel();
    const unknown = await fetch(`${base}/v1/events?since=1`, { headers: auth(k.ann) });
    expect(unknown.status).toBe(400);
    await unknown.body?.cancel();
  });
});
