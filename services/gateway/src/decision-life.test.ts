/**
 * A pending decision outlives the run's retention (round 47 `decision-life`). A run's decisions
 * hash (`decisions:{<runId>}`) used to get one retention (ISLET_RUN_RETENTION_SECONDS) from each
 * write; with a retention below the decision's own wait (ISLET_DECISION_EXPIRE_MS) the pending
 * decision vanished before a person answered it: a held call's wait read "no decision" and the run
 * ended Cancelled ("no decision arrived while the call waited"), and the answer itself was a 404 (a
 * stopped run's too). Now the request keeps the hash for the decision's wait plus one retention
 * (services/runs decision-store.ts, lua/request-decision-1.lua), and an answer never shortens it
 * (lua/settle-decision-2.lua: a stopped run's replay after a long queue still reads the answer).
 * The real gateway path (the runner's internal call endpoint, the public answer endpoint, the
 * decision store's scripts on a real Redis) with a 1 s retention and a 60 s decision wait: both
 * tests fail on 6b60376a (the answer is a 404 and the App is never called).
 */
import { createLogger, generateSealKey, loadConfig } from '@islet/core';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from './app.ts';
import type { AppResponse } from './app-http.ts';
import { createGatewayDeps } from './create-deps.ts';

const INTERNAL = 'internal-token-for-decision-life';
/** Seconds: the wait below outlives it (below the config's floor of 60, set past the parser). */
const RETENTION = 1;
let redis: RedisServer;
let app: FastifyInstance;
let deps: Awaited<ReturnType<typeof createGatewayDeps>>;
let key: string;
let bank: string;
const posted: Array<{ tool: string; idempotencyKey: string }> = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  redis = await startRedis({ appendOnly: false });
  const config = {
    ...loadConfig({
      ISLET_REDIS_URL: redis.url,
      ISLET_SEAL_KEYS: generateSealKey(),
      ISLET_INTERNAL_TOKEN: INTERNAL,
      ISLET_DECISION_EXPIRE_MS: '60000',
    }),
    ISLET_RUN_RETENTION_SECONDS: RETENTION,
  };
  deps = await createGatewayDeps(config, createLogger({ name: 'test', level: 'silent' }));
  deps.postToApp = async (_url, headers, body): Promise<AppResponse> => {
    const { tool } = JSON.parse(body) as { tool: string };
    posted.push({ tool, idempotencyKey: headers['idempotency-key'] ?? '' });
    return { status: 200, text: '{"paid":true}' };
  };
  app = await buildApp(deps);
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use', 'decisions'])).key;
  const h = await deps.connections.create('acme', {
    name: 'Bank',
    kind: 'http',
    url: 'https://bank.example.com/app',
    tools: [{ name: 'pay', inputSchema: {}, policy: 'ask' }],
    resources: [],
    prompts: [],
  });
  if (!h.ok) throw new Error('connection');
  bank = h.connection.id;
});

afterAll(async () => {
  await app?.close();
  await deps?.close();
  await redis?.stop();
});

async function submit(approval: 'hold' | 'stop'): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${key}` },
    payload: {
      code: 'return 1',
      description: 'Decision life',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [bank],
      approval,
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
}

/** The call as a runner sends it (an execution's attempt, the call's index). */
const serve = (id: string, attempt: number) =>
  app.inject({
    method: 'POST',
    url: `/internal/v1/code-runs/${id}/calls`,
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { attempt, index: 0, binding: 'bank.pay', argsJson: '{"cents":100}' },
  });

const answer = (id: string) =>
  app.inject({
    method: 'POST',
    url: `/v1/code-runs/${id}/decisions`,
    headers: { authorization: `Bearer ${key}` },
    payload: { index: 0, allow: true },
  });

const paid = (id: string) => posted.filter((p) => p.tool === 'pay' && p.idempotencyKey.includes(id));

async function pendingDecision(id: string) {
  for (let i = 0; i < 200; i++) {
    const [d] = await deps.decisions.listRun(id);
    if (d) return d;
    await sleep(25);
  }
  throw new Error(`no decision for ${id}`);
}

describe('a pending decision past the run retention', () => {
  it('held in place: answered after the retention passed, the held call goes on and is delivered once', async () => {
    const id = await submit('hold');
    const held = serve(id, await deps.journal.nextAttempt(id));
    expect((await pendingDecision(id)).state).toBe('pending');
    // The retention passes while the call waits (the held wait re-reads the decision every second).
    await sleep(RETENTION * 1000 + 1500);
    expect((await deps.decisions.listRun(id)).map((d) => d.state)).toEqual(['pending']);
    const answered = await answer(id);
    expect(answered.statusCode, answered.body).toBe(200);
    const res = await held;
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().outcome).toEqual({ type: 'result', valueJson: '{"paid":true}' });
    expect(paid(id)).toHaveLength(1);
    // A replay (its runner lost) answers it from the journal: not sent again.
    const again = await serve(id, await deps.journal.nextAttempt(id));
    expect(again.json().outcome).toEqual({ type: 'result', valueJson: '{"paid":true}' });
    expect(paid(id)).toHaveLength(1);
  });

  it('stopped: answered after the retention passed, the replay reads the answer and delivers the call once', async () => {
    const id = await submit('stop');
    const first = await serve(id, await deps.journal.nextAttempt(id));
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().outcome).toMatchObject({ type: 'stop', code: 'suspended' });
    await sleep(RETENTION * 1000 + 1500);
    expect((await deps.decisions.listRun(id)).map((d) => d.state)).toEqual(['pending']);
    const answered = await answer(id);
    expect(answered.statusCode, answered.body).toBe(200);
    // The answer queued the run again (its next round's job); the replay meets the call, here
    // after another retention (a long queue): the answer is still there to read.
    expect(await deps.runQueue.hasJob('read-only', `${id}-r1`)).toBe(true);
    await sleep(RETENTION * 1000 + 500);
    const replay = await serve(id, await deps.journal.nextAttempt(id));
    expect(replay.json().outcome).toEqual({ type: 'result', valueJson: '{"paid":true}' });
    expect(paid(id)).toHaveLength(1);
    expect((await deps.decisions.listRun(id)).map((d) => d.state)).toEqual(['allowed']);
  });
});
