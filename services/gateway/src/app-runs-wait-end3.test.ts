/**
 * The reader of the next release's pushed end (round 42 `format-next`): `<id> end3`, `end2` with
 * its journal's call entries and sources as JSON values rather than JSON strings (the next
 * release's end script, services/runs/test/next-end-push.ts: the stored texts spliced into the
 * message, parsed once with it). This release writes `end2` and reads both; a waited run with calls
 * whose end the next release's script pushes is answered from the push (no read of the run), byte
 * for byte the `GET` of the run, in both stored formats (journal layouts 1 and 2). Fails on d92635a,
 * which takes `end3` for "the run changed" and reads the run.
 */
import { keys } from '@islet/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { endLikeNextRelease } from '../../runs/test/next-end-push.ts';
import { auth, run } from '../test/app-fixture.ts';
import {
  type GatewayAppUnderTest,
  listenRunEvents,
  startGatewayApp,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';

const source = { connectionId: 'c-1', connectionName: 'CRM "main"', name: 'find', kind: 'tool' as const };

describe.each(['1', '2'])('a waited run with calls pushed as `end3`, format %s', (format) => {
  let gateway: GatewayAppUnderTest | undefined;
  let app: FastifyInstance;
  let deps: TestGatewayDeps;
  let key: string;
  let sub: TestGatewayDeps['redis'] | undefined;
  const messages: string[] = [];

  beforeAll(async () => {
    gateway = await startGatewayApp({ env: { ISLET_WRITE_FORMAT: format } });
    ({ app, deps } = gateway);
    await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
    key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
    sub = await listenRunEvents(deps.redis, messages);
  });
  afterAll(async () => {
    sub?.disconnect();
    await gateway?.close();
  });

  it('answered from the push, not read; the read bytes, every call in it', async () => {
    const session = `end3-${format}`;
    const listen = vi.spyOn(deps.hub, 'listen');
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10', 'content-type': 'application/json' },
      payload: JSON.stringify(run({ sessionId: session })),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', session), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    const stored = id ? await deps.runs.get(id) : null;
    if (!id || !stored) throw new Error('run not stored');
    for (let i = 0; i < 100 && !listen.mock.calls.some(([k]) => k === id); i++)
      await new Promise((r) => setTimeout(r, 10));
    listen.mockRestore();
    // Three calls of one binding (one source, shared), one failed, one with quotes in its value.
    const attempt = await deps.journal.nextAttempt(id);
    for (const index of [0, 1, 2]) {
      await deps.journal.claim(id, attempt, {
        index,
        binding: 'crm.find',
        argsJson: `{"q":${index}}`,
        source,
        sendNow: true,
      });
      await deps.journal.complete(
        id,
        index,
        index === 1
          ? ({ type: 'error', message: 'no "such" row', reason: 'Error' } as never)
          : { type: 'result', valueJson: `{"found":"a \\"b\\" / c ${index}"}` },
      );
    }
    const restore = await endLikeNextRelease(deps.redis);
    const get = vi.spyOn(deps.runs, 'get');
    let reads: number;
    let res: Awaited<typeof answer>;
    try {
      await deps.runs.finish(stored, {
        status: 'Completed',
        result: { _tag: 'Completed', value: 3, logs: [] },
        text: '3',
      });
      res = await answer;
    } finally {
      reads = get.mock.calls.length;
      get.mockRestore();
      restore();
    }
    // The next release's push: its journal's entries are objects, not strings.
    const message = messages.find((m) => m.startsWith(`${id} end3 `));
    if (!message) throw new Error('no end3 push');
    const [, journal] = JSON.parse(message.slice(`${id} end3 `.length)) as [unknown, unknown[]];
    expect(journal.filter((v) => typeof v === 'object')).toHaveLength(format === '2' ? 4 : 3);
    expect(reads).toBe(0);
    expect(res.statusCode).toBe(200);
    const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
    expect(res.body).toBe(read.body);
    const body = res.json();
    expect(body.calls).toHaveLength(3);
    expect(body.calls[0]).toMatchObject({ index: 0, binding: 'crm.find', source });
  });
});
