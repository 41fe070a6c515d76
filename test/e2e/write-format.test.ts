/**
 * `ISLET_WRITE_FORMAT` end to end with real processes (test/bench/README.md round 40 `seal-one`,
 * round 41 `format-default`): gateway 0 and runner 0 set `1` (what releases before e807b91 read:
 * an upgrade from one of them sets it for its roll), gateway 1 and runner 1 run with the default,
 * format 2 (a run's program and request as one sealed field `pick`, its result and text as one
 * `ended`). Each gateway's submits are picked up by a runner of each format in turn (the other one
 * stopped), and every run is read on both gateways: the waited answer (the pushed end, through the
 * gateway's own-seal memo), the status read, the event stream — the same answer whichever wrote it.
 */
import { createRedis } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, readSse, startAppServer, until } from './helpers.ts';

let cluster: Cluster;
let gw: Api[];
let app: Awaited<ReturnType<typeof startAppServer>>;
let connectionId: string;

beforeAll(async () => {
  // Gateway 1 and runner 1 take the default: nothing of it inherited from this environment (the
  // devstack passes its environment on to its children, cluster-env.ts `inheritedEnv`).
  delete process.env.ISLET_WRITE_FORMAT;
  cluster = await startCluster({
    gateways: 2,
    gatewayEnv: [{ ISLET_WRITE_FORMAT: '1' }, {}],
    runners: [
      { modes: ['read-only'], env: { ISLET_WRITE_FORMAT: '1' } },
      { modes: ['read-only'], env: {} },
    ],
  });
  gw = cluster.gatewayUrls.map((url) => api(url, cluster.devKey));
  app = await startAppServer(async (d) => ({
    status: 200,
    body: JSON.stringify({ structuredContent: { echo: d.body.arguments ?? {} } }),
  }));
  const conn = await gw[0]!('POST', '/v1/connections', {
    name: 'Echo',
    kind: 'http',
    url: app.url,
    tools: [
      { name: 'say', inputSchema: { type: 'object' } },
      { name: 'send', policy: 'ask' },
    ],
  });
  expect(conn.status, JSON.stringify(conn.body)).toBe(201);
  connectionId = conn.body.id;
}, 90_000);

afterAll(async () => {
  await app?.close();
  await cluster?.stop();
});

const programs = [
  {
    code: 'console.log("hi"); return { n: 6 * 7 }',
    status: 'Completed',
    text: 'hi\n{"n":42}',
  },
  { code: 'let x = 1', status: 'Completed', text: '(run_code completed with no output)' },
  {
    code: 'console.log("before"); throw new Error("boom")',
    status: 'Failed',
    text: /^code run failed \(exception\): .*boom[\s\S]*Captured output:\nbefore$/,
  },
  // Lines past 1 KiB (a failed run's text refers to them when stored, stored-text.ts).
  {
    code: 'console.log("y".repeat(3000)); throw new Error("long")',
    status: 'Failed',
    text: /Captured output:\ny{3000}$/,
  },
  // The request's connection is read at the pick-up (its bindings), and the App is called.
  {
    code: 'const r = await apps.echo.say({ w: "hello" }); return r.structuredContent.echo.w',
    status: 'Completed',
    text: 'hello',
    connections: true,
  },
] as const;

async function runAll(on: number, runner: number): Promise<void> {
  const redis = createRedis(cluster.redisUrl);
  try {
    for (const [i, p] of programs.entries()) {
      const res = await gw[on]!(
        'POST',
        '/v1/runs',
        {
          code: p.code,
          description: `format test ${i}`,
          sessionId: `wf-${on}-${runner}`,
          turnId: 't',
          callId: `c-${i}`,
          ...('connections' in p ? { connections: [connectionId] } : {}),
        },
        { prefer: 'wait=20' },
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const body: Loose = res.body;
      expect(body.status, JSON.stringify(body)).toBe(p.status);
      expect(body.code).toBe(p.code);
      expect(body.reason).toBe(`format test ${i}`);
      if (typeof p.text === 'string') expect(body.text).toBe(p.text);
      else expect(body.text).toMatch(p.text);
      // What each wrote: the submit's gateway the program's field(s), the runner the end's.
      const stored = await redis.hgetall(`islet:run:{${body.id}}`);
      const names = Object.keys(stored);
      if (on === 1) {
        expect(names).toContain('pick');
        expect(names).not.toContain('code');
        expect(names).not.toContain('request');
      } else {
        expect(names).toEqual(expect.arrayContaining(['code', 'request']));
        expect(names).not.toContain('pick');
      }
      if (runner === 1) {
        expect(names).toContain('ended');
        for (const old of ['result', 'text', 'textRef']) expect(names).not.toContain(old);
      } else {
        expect(names).toContain('result');
        expect(names).not.toContain('ended');
      }
      // Both gateways read it as the waited answer gave it, and stream its end.
      for (const g of [0, 1]) {
        const read = await gw[g]!('GET', `/v1/code-runs/${body.id}`);
        expect(read.status).toBe(200);
        expect(read.body).toEqual(body);
        const events = await readSse(
          `${cluster.gatewayUrls[g]}/v1/code-runs/${body.id}/events`,
          cluster.devKey,
          {
            until: (e) => e.event === 'end',
          },
        );
        expect(events.at(-1)?.data).toMatchObject({ status: p.status });
      }
    }
  } finally {
    redis.disconnect();
  }
}

describe('ISLET_WRITE_FORMAT 1 beside the default (2)', () => {
  it('runs ended by a format-1 runner read right, submitted on either gateway', async () => {
    await cluster.killRunner(1, 'SIGTERM');
    await runAll(0, 0);
    await runAll(1, 0);
  }, 120_000);

  it('runs ended by a runner of the default (format 2) read right, submitted on either gateway', async () => {
    await cluster.restartRunner(1);
    await cluster.killRunner(0, 'SIGTERM');
    await runAll(0, 1);
    await runAll(1, 1);
  }, 120_000);

  it('a run replayed after its decision reads its program and request again from `pick`', async () => {
    const res = await gw[1]!(
      'POST',
      '/v1/runs',
      {
        code: 'const r = await apps.echo.send({ to: "team" }); return r.structuredContent.echo.to',
        description: 'asks first',
        sessionId: 'wf-ask',
        turnId: 't',
        callId: 'c-ask',
        connections: [connectionId],
      },
      { prefer: 'wait=20' },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.status).toBe('Waiting');
    const id = res.body.id as string;
    const allowed = await gw[0]!('POST', `/v1/code-runs/${id}/decisions`, { index: 0, allow: true });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    for (const g of [0, 1]) {
      const done: Loose = await until(async () => {
        const r = await gw[g]!('GET', `/v1/code-runs/${id}`);
        return r.body.status === 'Completed' && r.body;
      });
      expect(done.text).toBe('team');
      expect(done.code).toContain('apps.echo.send');
    }
    const redis = createRedis(cluster.redisUrl);
    try {
      const stored = await redis.hgetall(`islet:run:{${id}}`);
      expect(Object.keys(stored)).toEqual(expect.arrayContaining(['pick', 'ended']));
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});
