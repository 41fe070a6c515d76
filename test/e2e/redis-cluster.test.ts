/**
 * The local cluster on a real Redis Cluster: six `redis-server --cluster-enabled yes` (3 masters,
 * 3 replicas, a password), two gateways and three runners in cluster mode (ISLET_REDIS_MODE=cluster,
 * ISLET_REDIS_URL = the seeds, the password as a file). The main flows of the other e2e suites,
 * chosen to touch every key family: runs (trivial, Prefer: wait, 202 + polling, SSE), binding calls
 * to an http App and a client App, a Code Mode decision (stop → decide → replay → Completed),
 * skills, in-flight quota and Idempotency-Key, session listing, settings, fair share, and
 * `npm start` pointed at the cluster. One Redis Cluster for the whole file.
 */

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRedis, keys, sealerFromConfig } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { codeRunRecordSchema } from '@islet/protocol';
import { createRunStore } from '@islet/runs';
import { freePort, type RedisCluster, startRedisCluster } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Api,
  api,
  createConnection,
  httpConnection,
  type Loose,
  readSse,
  sleep,
  startAppServer,
  until,
} from './helpers.ts';
import { clusterRedisConfig } from './redis-cluster-config.ts';
import {
  expectClientCallAcross,
  expectIdempotentAcross,
  expectSessionPages,
  expectSpreadRunsComplete,
  type TwoGateways,
  twoGatewaysOf,
} from './two-gateways.ts';

let redis: RedisCluster;
let cluster: Cluster;
let a: Api; // dev tenant on gateway 0
let b: Api; // dev tenant on gateway 1
let app: Awaited<ReturnType<typeof startAppServer>>;
let g: TwoGateways; // the cases shared with cluster.test.ts
/**
 * The App's `hold` tool answers only when the test lets it: a hold never ends on a timer that a
 * loaded machine could outlast while the test is still filling the pool.
 */
let holdsOpen = false;
const heldCalls: Array<() => void> = [];
const releaseHolds = (count: number) => {
  for (const release of heldCalls.splice(0, count)) release();
};
const openHolds = () => {
  holdsOpen = true;
  releaseHolds(heldCalls.length);
};

const base = (extra: Record<string, unknown> = {}) => ({
  code: 'return 1',
  description: 'Return the number one',
  sessionId: 'sess-rc',
  turnId: 'turn-1',
  callId: 'call-1',
  ...extra,
});

async function newTenant(
  id: string,
  extra: Record<string, unknown> = {},
): Promise<{ api: Api; key: string }> {
  const t = await a('POST', '/v1/admin/tenants', { id, name: id, ...extra });
  expect(t.status, JSON.stringify(t.body)).toBe(201);
  const key = (
    await b('POST', `/v1/admin/tenants/${id}/keys`, { scopes: ['apps.use', 'sessions.read', 'decisions'] })
  ).body.key as string;
  return { api: api(cluster.gatewayUrls[1]!, key), key };
}

beforeAll(async () => {
  redis = await startRedisCluster({ masters: 3, replicasPerMaster: 1, password: 'rc-test-pass' });
  app = await startAppServer(async (d) => {
    if (d.body.tool === 'hold' && !holdsOpen) await new Promise<void>((release) => heldCalls.push(release));
    return {
      status: 200,
      body: JSON.stringify({
        structuredContent: { tool: d.body.tool, echo: d.body.arguments, key: d.idempotencyKey },
      }),
    };
  });
  cluster = await startCluster({
    redisConfig: clusterRedisConfig(redis),
    gateways: 2,
    runners: [
      { modes: ['read-only'], concurrency: 2 },
      { modes: ['read-only'], concurrency: 2 },
      { modes: ['workspace-write'], concurrency: 1 },
    ],
    env: {
      // The fair-share case's holds stand for work that keeps its slots: an App call would park its
      // run outside the slots (runner README, "Waiting holds no slot"), so parking is off here.
      ISLET_RUNNER_PARKED_MAX: '0',
      ISLET_TENANT_POOL_SHARE: '0.5',
      ISLET_RUNNER_LOCK_DURATION_MS: '3000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '1000',
      ISLET_CLIENT_CALL_TIMEOUT_MS: '15000',
    },
  });
  g = twoGatewaysOf(cluster, base);
  ({ a, b } = g);
}, 120_000);

afterAll(async () => {
  openHolds();
  await cluster?.stop();
  await app?.close();
  await redis?.stop();
}, 60_000);

describe('runs on a Redis Cluster', () => {
  it('Prefer: wait on one gateway, read on the other; runs spread over masters; SSE replays the stream', async () => {
    const res = await a('POST', '/v1/runs', base({ code: 'console.info("hi"); return { n: 6 * 7 }' }), {
      prefer: 'wait=30',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      status: 'Completed',
      result: { _tag: 'Completed', value: { n: 42 }, logs: [{ level: 'info', text: 'hi' }] },
      text: 'hi\n{"n":42}',
    });
    expect(() => codeRunRecordSchema.strict().parse(res.body)).not.toThrow();
    expect((await b('GET', `/v1/code-runs/${res.body.id}`)).body).toEqual(res.body);
    const events = await readSse(
      `${cluster.gatewayUrls[1]}/v1/code-runs/${res.body.id}/events`,
      cluster.devKey,
      {
        until: (e) => e.event === 'end',
      },
    );
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'Completed' } });

    // 202 + polling, across both gateways; the runs' own keys live on more than one master.
    const ids = await expectSpreadRunsComplete(g, 40_000);
    const masters = new Set(await Promise.all(ids.map((id) => redis.masterOf(keys.run(id)))));
    expect(masters.size).toBeGreaterThan(1);
  });

  it('an Idempotency-Key returns the same run from either gateway; a session lists page by page', async () => {
    await expectIdempotentAcross(g);
    await expectSessionPages(g);
  });

  it('in-flight quota: a tenant at its limit gets 429 with Retry-After; its runs still end', async () => {
    const { api: q } = await newTenant('quota-rc', { maxInFlightRuns: 2 });
    const conn = await createConnection(q, {
      name: 'Hold',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'hold' }],
    });
    const hold = base({ code: 'await apps.hold.hold({}); return "held"', connections: [conn.id] });
    const r1 = await q('POST', '/v1/runs', { ...hold, callId: 'q1' });
    const r2 = await q('POST', '/v1/runs', { ...hold, callId: 'q2' });
    expect([r1.status, r2.status]).toEqual([202, 202]);
    const r3 = await q('POST', '/v1/runs', { ...hold, callId: 'q3' });
    expect(r3.status).toBe(429);
    expect(Number(r3.headers.get('retry-after'))).toBeGreaterThan(0);
    openHolds();
    for (const id of [r1.body.id, r2.body.id])
      await until(async () => (await q('GET', `/v1/code-runs/${id}`)).body.status === 'Completed', 30_000);
  });
});

describe('binding calls on a Redis Cluster', () => {
  it('http: parallel calls, Idempotency-Key run:index, each delivered once; arguments sealed at rest', async () => {
    const conn = await createConnection(a, {
      name: 'Work calendar',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'list-events' }, { name: 'delete-all', policy: 'deny' }],
    });
    const code = `
      const xs = await Promise.all([0, 1, 2].map((i) => apps.work_calendar.list_events({ day: "2026-10-2" + i })));
      let denied = null;
      try { await apps.work_calendar.delete_all({}); } catch (e) { denied = e.name; }
      return { keys: xs.map((r) => r.structuredContent.key), days: xs.map((r) => r.structuredContent.echo.day), denied };`;
    const res = await a('POST', '/v1/runs', base({ code, connections: [conn.id] }), { prefer: 'wait=30' });
    expect(res.body.status, JSON.stringify(res.body)).toBe('Completed');
    const id = res.body.id;
    expect(res.body.result.value).toEqual({
      keys: [`${id}:0`, `${id}:1`, `${id}:2`],
      days: ['2026-10-20', '2026-10-21', '2026-10-22'],
      denied: 'AppCallDenied',
    });
    const mine = app.deliveries.filter((d) => d.idempotencyKey.startsWith(`${id}:`));
    expect(mine.map((d) => d.idempotencyKey).sort()).toEqual([`${id}:0`, `${id}:1`, `${id}:2`]);
    const r = createRedis(cluster.redisConfig);
    try {
      const dump = JSON.stringify(await r.hgetall(keys.run(id)));
      expect(dump).not.toContain('2026-10-2');
    } finally {
      r.disconnect();
    }
  });

  it('client: the call goes out on the event stream, is answered through the other gateway, SSE resumes', async () => {
    // Another tenant's key, refused the call's answer.
    await expectClientCallAcross(g, (await newTenant('wrong-rc')).api);
  });

  it('a Code Mode decision: the run stops, is decided on the other gateway, replays and completes; nothing sent twice', async () => {
    const mail = await httpConnection(a, 'Mail', app.url, { read_note: 'allow', send_email: 'ask' });
    const code = `const note = await apps.mail.read_note({ id: 7 });
const sent = await apps.mail.send_email({ to: "team@example.com", note: note.structuredContent.echo.id });
return sent.structuredContent.echo;`;
    const submitted = await a('POST', '/v1/runs', base({ style: 'code-mode', code, connections: [mail.id] }));
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    const waiting = await until(async () => {
      const r = await b('GET', `/v1/code-runs/${id}`);
      return r.body.status === 'Waiting' && r.body;
    });
    expect(waiting.calls.map((c: Loose) => [c.index, c.outcome._tag])).toEqual([
      [0, 'Done'],
      [1, 'Waiting'],
    ]);
    const pending = await b('GET', '/v1/decisions');
    expect(pending.body.items.find((d: Loose) => d.code.run === id)).toMatchObject({
      id: `${id}:1`,
      state: 'pending',
    });
    const answered = await b('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    expect(answered.status).toBe(200);
    expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: false })).status).toBe(409);
    const done = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${id}`);
      return r.body.status === 'Completed' && r.body;
    }, 30_000);
    expect(done.result.value).toEqual({ to: 'team@example.com', note: 7 });
    expect(app.deliveries.filter((d) => d.idempotencyKey === `${id}:0`)).toHaveLength(1);
    expect(app.deliveries.filter((d) => d.idempotencyKey === `${id}:1`)).toHaveLength(1);
    expect((await a('GET', '/v1/decisions')).body.items.map((d: Loose) => d.code.run)).not.toContain(id);
  });
});

describe('platform features on a Redis Cluster', () => {
  it('skills run through the per-mode queue and answer the skill shape', async () => {
    const js = await b('POST', '/v1/skills/run_code', { language: 'javascript', code: 'console.log(6 * 7)' });
    expect(js.status, JSON.stringify(js.body)).toBe(200);
    expect(js.body).toEqual({
      success: true,
      output: '42\n',
      error: '',
      exitCode: 0,
      language: 'javascript',
    });
    const sh = await a('POST', '/v1/skills/run_code', { language: 'bash', code: 'echo oops >&2; exit 3' });
    expect(sh.body).toMatchObject({ success: false, error: 'oops\n', exitCode: 3, language: 'bash' });
  });

  it('settings: a stale expectedVersion gets 409; every runner applies the new settings', async () => {
    const cur = (await a('GET', '/v1/platform/settings')).body;
    const small = await b('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version,
      codeMode: { ...cur.codeMode, enabled: true, outputBytes: 1024 },
    });
    expect(small.status, JSON.stringify(small.body)).toBe(200);
    const stale = await a('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version,
      codeMode: { enabled: false },
    });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      type: 'https://islet.dev/problems/version-conflict',
      currentVersion: cur.version + 1,
    });
    // Runs of both gateways, on the runners, fail a too-large Code Mode result under the new settings.
    const big = await Promise.all(
      [a, b].map((on) =>
        on('POST', '/v1/runs', base({ style: 'code-mode', code: 'return "x".repeat(5000)' }), {
          prefer: 'wait=30',
        }),
      ),
    );
    for (const r of big)
      expect(r.body.result).toMatchObject({ reason: 'OutputTooLarge', kind: 'output-limit' });
    const restore = await b('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version + 1,
      codeMode: cur.codeMode,
    });
    expect(restore.status).toBe(200);
  });

  it("fair share: alone, a tenant uses the whole read-only pool; another tenant's run takes the first freed slot", async () => {
    holdsOpen = false;
    const flood = await newTenant('flood-rc');
    const other = await newTenant('other-rc');
    const conn = await createConnection(flood.api, {
      name: 'Hold',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'hold' }],
    });
    const before = app.deliveries.length;
    const ids: string[] = [];
    const submit = async (i: number) => {
      const r = await flood.api(
        'POST',
        '/v1/runs',
        base({ code: 'await apps.hold.hold({}); return 1', connections: [conn.id], callId: `f${i}` }),
      );
      expect(r.status).toBe(202);
      ids.push(r.body.id);
    };
    // Four holds one after another: nobody else waits, so all four run (the whole pool).
    for (let i = 0; i < 4; i++) {
      await submit(i);
      await until(async () => app.deliveries.length - before >= i + 1, 20_000, 20);
    }
    await submit(4);
    await submit(5);
    await sleep(300);
    // Every slot is held (no hold answers until released): the last two wait in the queue.
    expect(app.deliveries.slice(before).filter((d) => d.body.tool === 'hold')).toHaveLength(4);
    const quick = await other.api('POST', '/v1/runs', base({ code: 'return 6 * 7' }));
    expect(quick.status).toBe(202);
    // One slot frees: the other tenant's run takes it, ahead of the flood's two queued before it.
    releaseHolds(1);
    await until(
      async () => (await other.api('GET', `/v1/code-runs/${quick.body.id}`)).body.status === 'Completed',
      30_000,
      50,
    );
    expect((await other.api('GET', `/v1/code-runs/${quick.body.id}`)).body.result).toMatchObject({
      value: 42,
    });
    openHolds();
    await until(
      async () => {
        const all = await Promise.all(ids.map((id) => flood.api('GET', `/v1/code-runs/${id}`)));
        return all.every((r) => r.body.status === 'Completed');
      },
      60_000,
      250,
    );
    const r = createRedis(cluster.redisConfig);
    try {
      // The other tenant's run started before the flood's two runs queued ahead of it.
      const started = async (id: string) =>
        Number((await r.xrange(keys.runEvents(id), '-', '+'))[1]?.[0].split('-')[0]);
      const quickStart = await started(quick.body.id);
      for (const id of ids.slice(4)) expect(await started(id)).toBeGreaterThan(quickStart);
      expect(await r.zcard(keys.poolTenantLeases('read-only', 'flood-rc'))).toBe(0);
    } finally {
      r.disconnect();
    }
  }, 90_000);
});

describe('npm start on a Redis Cluster', () => {
  it('ISLET_REDIS_MODE=cluster with the seeds and a password file: runs complete; Ctrl-C stops only its own processes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'islet-rc-start-'));
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, redis.password!, { mode: 0o600 });
    const port = await freePort();
    const key = `isk_rc_${Date.now()}`;
    const proc = spawn(
      process.execPath,
      [fileURLToPath(new URL('../../services/devstack/src/main.ts', import.meta.url))],
      {
        env: {
          ...process.env,
          ISLET_PORT: String(port),
          ISLET_DEV_API_KEY: key,
          ISLET_REDIS_MODE: 'cluster',
          ISLET_REDIS_URL: redis.seeds,
          ISLET_REDIS_PASSWORD_FILE: passwordFile,
          // The stack above serves the same queues: both must open each other's runs (with its
          // own keys, a run taken by the other stack's runner failed authentication).
          ISLET_SEAL_KEYS: cluster.env.ISLET_SEAL_KEYS!,
          ISLET_INTERNAL_TOKEN: cluster.env.ISLET_INTERNAL_TOKEN!,
          ISLET_JOURNAL_ARGS_KEY: cluster.env.ISLET_JOURNAL_ARGS_KEY!,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    proc.stdout.on('data', (c) => {
      out += c;
    });
    proc.stderr.on('data', (c) => {
      out += c;
    });
    try {
      await until(async () => out.includes('Ctrl-C stops everything') || proc.exitCode !== null, 60_000, 100);
      expect(out).toContain('Ctrl-C stops everything');
      expect(out).toMatch(/redis {5}cluster .*\(existing: left as it is on exit\)/);
      expect(out).not.toContain(redis.password!);
      const children = readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, 'utf8')
        .trim()
        .split(/\s+/);
      expect(children.map((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim())).not.toContain(
        'redis-server',
      );
      const res = await api(`http://127.0.0.1:${port}`, key)(
        'POST',
        '/v1/runs',
        base({ code: 'return "rc"', sessionId: 'npm-start' }),
        {
          prefer: 'wait=30',
        },
      );
      expect(res.body).toMatchObject({ status: 'Completed', result: { value: 'rc' } });
      // Sealed with the keys it was given: the stack above opens this stack's run.
      const shared = createRedis(clusterRedisConfig(redis));
      try {
        const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: cluster.env.ISLET_SEAL_KEYS! });
        const stored = await createRunStore(shared, sealer).get(res.body.id);
        expect(stored?.code).toBe('return "rc"');
      } finally {
        shared.disconnect();
      }
      proc.kill('SIGINT');
      await new Promise((r) => proc.once('exit', r));
      // The cluster is untouched: the stack above still runs on it.
      const after = await a(
        'POST',
        '/v1/runs',
        base({ code: 'return "still"', sessionId: 'after-npm-start' }),
        { prefer: 'wait=30' },
      );
      expect(after.body.result.value).toBe('still');
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
