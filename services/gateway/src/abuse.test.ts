/**
 * Malformed and abusive requests (issue 9 §5): deep JSON anywhere is a 4xx problem and consumes
 * nothing; failed authentication and open event streams are limited (429 + Retry-After); the
 * optional four-eyes rule. Real Redis, the real app through inject (and a real listener for SSE).
 */
import { createLogger, generateSealKey, keys, loadConfig } from '@islet/core';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from './app.ts';
import { createGatewayDeps } from './create-deps.ts';

const INTERNAL = 'internal-token-for-abuse-tests';
let redis: RedisServer;
let app: FastifyInstance;
let deps: Awaited<ReturnType<typeof createGatewayDeps>>;
let key: string;
let clientConn: string;
const auth = () => ({ authorization: `Bearer ${key}` });

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

beforeAll(async () => {
  redis = await startRedis({ appendOnly: false });
  const config = loadConfig({
    ISLET_REDIS_URL: redis.url,
    ISLET_SEAL_KEYS: generateSealKey(),
    ISLET_INTERNAL_TOKEN: INTERNAL,
    ISLET_CLIENT_CALL_TIMEOUT_MS: '20000',
  });
  deps = await createGatewayDeps(config, createLogger({ name: 'test', level: 'silent' }));
  app = await buildApp(deps);
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use'])).key;
  const c = await deps.connections.create('acme', {
    name: 'Phone',
    kind: 'client',
    tools: [{ name: 'ask_user', inputSchema: {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!c.ok) throw new Error('connection');
  clientConn = c.connection.id;
});

afterAll(async () => {
  await app?.close();
  await deps?.close();
  await redis?.stop();
});

async function submit(extra: Record<string, unknown> = {}, headers = auth()): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers,
    payload: {
      code: 'return 1',
      description: 'Abuse',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [clientConn],
      ...extra,
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
}

describe('deeply nested JSON', () => {
  it('a nested client answer is a 4xx problem and does not consume the call; the right answer then lands', async () => {
    const id = await submit();
    const served = app.inject({
      method: 'POST',
      url: `/internal/v1/code-runs/${id}/calls`,
      headers: { authorization: `Bearer ${INTERNAL}` },
      payload: { attempt: await deps.journal.nextAttempt(id), index: 0, binding: 'phone.ask_user', argsJson: '{}' },
    });
    const pendingKey = keys.clientCallPending(id, 0);
    for (let i = 0; i < 100 && !(await deps.redis.exists(pendingKey)); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await deps.redis.exists(pendingKey)).toBe(1);
    for (const depth of [65, 5000, 200_000]) {
      const bad = await app.inject({
        method: 'POST',
        url: `/v1/code-runs/${id}/calls/0/result`,
        headers: { ...auth(), 'content-type': 'application/json' },
        payload: `{"result":${nested(depth)}}`,
      });
      expect(bad.statusCode, bad.body).toBe(400);
      expect(String(bad.headers['content-type'])).toContain('application/problem+json');
      expect(bad.json().type).toBe('https://islet.dev/problems/json-too-deep');
      expect(await deps.redis.exists(pendingKey)).toBe(1);
    }
    const ok = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${id}/calls/0/result`,
      headers: auth(),
      payload: { result: { deep: JSON.parse(nested(60)) } },
    });
    expect(ok.statusCode, ok.body).toBe(202);
    expect((await served).json().outcome).toEqual({
      type: 'result',
      valueJson: JSON.stringify({ deep: JSON.parse(nested(60)) }),
    });
  });
});
