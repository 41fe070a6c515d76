// /readyz answers 200 only while the API server and Redis both answer (fake Kubernetes API that
// can hang this operator's calls, a real Redis that is stopped).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operator } from '../src/operator.ts';
import { type OperatorFixture, startOperatorFixture } from './operator-fixture.ts';

describe('/readyz', () => {
  let fx: OperatorFixture;
  let op: Operator;
  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${op.metricsPort()}/readyz`);
    return { status: res.status, body: await res.text() };
  };

  beforeAll(async () => {
    fx = await startOperatorFixture({});
    op = await fx.startOperator({}, 'op-r');
  });
  afterAll(async () => {
    fx?.api.unhang('op-r');
    await fx?.stop();
  });

  it('is ready with both, not ready while the API server hangs or Redis is down', async () => {
    expect(await readyz()).toEqual({ status: 200, body: 'ready\nkubernetes: ok\nredis: ok\n' });
    fx.api.hang('op-r');
    const hung = await readyz();
    expect(hung.status).toBe(503);
    expect(hung.body).toMatch(/kubernetes: RequestTimeoutError: \w+: no answer within \d+ ms/);
    expect(hung.body).toContain('redis: ok');
    fx.api.unhang('op-r');
    expect((await readyz()).status).toBe(200);
    await fx.redisServer.stop();
    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body).toContain('kubernetes: ok');
    expect(down.body).not.toContain('redis: ok');
  }, 20_000);
});
