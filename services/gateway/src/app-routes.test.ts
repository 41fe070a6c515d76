/**
 * The gateway app's health, metrics, openapi and docs routes (every registered route documented,
 * nothing else) through inject on real Redis, and `clientGone`. The shared set-up is
 * test/app-fixture.ts.
 */
import { EventEmitter, getEventListeners } from 'node:events';
import Fastify, { type FastifyReply } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { onAppFixture } from '../test/app-fixture.ts';
import { createAuth } from './auth.ts';
import { createBindingCalls } from './binding-calls.ts';
import { createMcpApps } from './mcp-apps.ts';
import { clientGone } from './problem-reply.ts';
import { registerRoutes } from './routes/index.ts';
import { createRunsService } from './runs-service.ts';

const { app, deps } = await onAppFixture();

describe('runs through inject (no runner)', () => {
  it('serves health, metrics, openapi and docs', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const m = await app.inject({ method: 'GET', url: '/metrics' });
    expect(m.body).toContain('islet_http_requests_total');
    expect(m.body).toContain('islet_queue_depth{mode="read-only",state="waiting"');
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/v1/runs');
    const docs = await app.inject({ method: 'GET', url: '/docs' });
    expect(docs.body).toContain('swagger-ui');
    expect(docs.headers['content-security-policy']).not.toMatch(/https:|validator|upgrade-insecure/);
    expect((await app.inject({ method: 'GET', url: '/docs/json' })).json()).toEqual(doc);
  });
  it('counts each response in its route, method and code series, calling prom-client once a series', async () => {
    const scrape = async () => (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const series = (body: string, line: RegExp) => Number(line.exec(body)?.[1] ?? 0);
    const healthz = /^islet_http_requests_total\{route="\/healthz",method="GET",code="200"[^}]*\} (\d+)$/m;
    const healthzCount =
      /^islet_http_request_duration_seconds_count\{[^}]*route="\/healthz",method="GET"[^}]*\} (\d+)$/m;
    const missing = /^islet_http_requests_total\{route="unmatched",method="GET",code="404"[^}]*\} (\d+)$/m;
    await app.inject({ method: 'GET', url: '/healthz' });
    await app.inject({ method: 'GET', url: '/no-such-route' });
    const before = await scrape();
    // The labels were resolved to their series once: after that, no prom-client inc/observe a response
    // (each hashed and checked its labels: round 29 gw-cpu).
    const inc = vi.spyOn(deps.metrics.httpRequests, 'inc');
    const observe = vi.spyOn(deps.metrics.httpDuration, 'observe');
    try {
      for (let i = 0; i < 20; i++) await app.inject({ method: 'GET', url: '/healthz' });
      for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: '/no-such-route' });
      // The scrapes before and after count as /metrics' own series (resolved by the first).
      expect(inc).not.toHaveBeenCalled();
      expect(observe).not.toHaveBeenCalled();
    } finally {
      inc.mockRestore();
      observe.mockRestore();
    }
    const after = await scrape();
    expect(series(after, healthz) - series(before, healthz)).toBe(20);
    expect(series(after, healthzCount) - series(before, healthzCount)).toBe(20);
    expect(series(after, missing) - series(before, missing)).toBe(3);
  });
  it('describes every registered route in /openapi.json, and nothing else', async () => {
    // A bare instance with an onRoute hook sees every route registerRoutes adds (buildApp's too).
    const registered = new Set<string>();
    const probe = Fastify();
    probe.addHook('onRoute', (route) => {
      // Hidden: the pages and assets of the API reference and the queue board (not API routes).
      if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const path = route.url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{path}');
      for (const m of methods) if (m !== 'HEAD') registered.add(`${m.toLowerCase()} ${path}`);
    });
    await registerRoutes(probe, {
      closing: new AbortController().signal,
      deps,
      auth: createAuth(deps),
      runsService: createRunsService(deps),
      bindingCalls: createBindingCalls(deps),
      mcpApps: createMcpApps(deps),
    });
    await probe.ready();
    await probe.close();
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const documented = new Set(
      Object.entries(doc.paths as Record<string, object>).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m} ${p}`),
      ),
    );
    expect(registered.size).toBeGreaterThan(20);
    expect([...documented].sort()).toEqual([...registered].sort());
  });
});

describe('clientGone', () => {
  it('aborts when the client goes or the app closes, and leaves no listener on the app signal', () => {
    const closing = new AbortController();
    const fakeReply = (finished: boolean) => {
      const raw = Object.assign(new EventEmitter(), { writableFinished: finished });
      return { reply: { raw } as unknown as FastifyReply, raw };
    };
    for (let i = 0; i < 20; i++) {
      const { reply, raw } = fakeReply(true);
      const signal = clientGone(reply, closing.signal);
      raw.emit('close');
      expect(signal.aborted).toBe(false);
    }
    expect(getEventListeners(closing.signal, 'abort')).toHaveLength(0);
    const gone = fakeReply(false);
    const goneSignal = clientGone(gone.reply, closing.signal);
    gone.raw.emit('close');
    expect(goneSignal.aborted).toBe(true);
    const open = clientGone(fakeReply(false).reply, closing.signal);
    closing.abort();
    expect(open.aborted).toBe(true);
  });
});
