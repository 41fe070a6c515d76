/**
 * A run's first start writes no journal (the record's `attempts` fences it). When that first
 * execution is frozen before its first call (a starved runner: SIGSTOP of its process group) and
 * loses its job's lock, another runner's stalled check re-fetches the job and begins attempt 2; the
 * frozen execution, woken, is told `superseded` at its first claim, and the run completes once,
 * every App call delivered once. Real processes, real redis-server, real BullMQ.
 */
import { createRedis, keys } from '@islet/core';
import { expect, it } from 'vitest';
import { startSlowAppCluster, until } from './helpers.ts';

it('a first execution frozen before its first call is superseded by the stalled job re-fetched; the run completes once', async () => {
  const { cluster, app, a, conn, stop } = await startSlowAppCluster({
    runners: [{ modes: ['read-only'] }, { modes: ['read-only'] }],
    env: {
      ISLET_RUNNER_LOCK_DURATION_MS: '2000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '500',
      ISLET_RUNNER_MAX_STALLED_COUNT: '20',
      ISLET_JOB_ATTEMPTS: '20',
      // Runner 0's own fetch takes the job (a submit's hand-off could pick runner 1's stale idle
      // registration, left by its SIGKILL below).
      ISLET_IDLE_HANDOFF: process.env.STALL_HANDOFF ?? 'off',
      // The runner says when an execution leaves its run to a newer one (an info line).
      ISLET_LOG_LEVEL: process.env.STALL_LEVEL ?? 'info',
    },
    delayMs: 10,
    answer: '{"v":1}',
  });
  const redis = createRedis(cluster.redisConfig);
  let frozen: number | undefined;
  const wake = () => {
    if (frozen !== undefined) process.kill(-frozen, 'SIGCONT');
    frozen = undefined;
  };
  try {
    // Only runner 0 fetches the first time.
    await cluster.killRunner(1, 'SIGKILL');
    const res = await a('POST', '/v1/runs', {
      // CPU before the first call: the window in which the first start wrote no journal yet.
      code: 'let x = 0; for (let i = 0; i < 4e8; i++) x = (x + i) % 1000003; const r = await apps.slow.wait({ x }); const s = await apps.slow.wait({ y: 1 }); return [x, r, s]',
      description: 'Spin, then call a slow App',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [conn.id],
    });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    await until(async () => (await redis.hget(keys.run(id), 'attempts')) === '1', 30_000, 5);
    frozen = cluster.runners[0]!.pid!;
    process.kill(-frozen, 'SIGSTOP');
    if (process.env.STALL_DIAG) console.log(`STOP ${Date.now()} pid ${frozen}`);
    // The premise: the first attempt began and claimed nothing (no journal at all).
    const journalBefore = await redis.hgetall(`islet:journal:{${id}}`);
    expect(journalBefore).toEqual({});
    await cluster.restartRunner(1);
    // Runner 1's stalled check takes the job back (runner 0's lock lapsed) and begins attempt 2.
    await until(async () => (await redis.hget(keys.run(id), 'attempts')) === '2', 30_000, 20);
    expect(await redis.hget(`islet:journal:{${id}}`, '#attempt')).toBe('2');
    if (process.env.STALL_DIAG) console.log(`CONT ${Date.now()}`);
    wake();
    const ended = await until(
      async () => {
        const r = await a('GET', `/v1/code-runs/${id}`);
        return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
      },
      60_000,
      100,
    );
    // The woken execution reaches its first claim, is told superseded, and writes nothing.
    if (process.env.STALL_HANDOFF !== 'on')
      await until(async () => /execution superseded/.test(cluster.output('runner', 0)), 30_000, 100);
    const run = await redis.hgetall(keys.run(id));
    const journal = await redis.hgetall(`islet:journal:{${id}}`);
    const perKey = new Map<string, number>();
    for (const d of app.deliveries) perKey.set(d.idempotencyKey, (perKey.get(d.idempotencyKey) ?? 0) + 1);
    expect({ status: ended.status, attempts: run.attempts, '#attempt': journal['#attempt'] }).toEqual({
      status: 'Completed',
      attempts: '2',
      '#attempt': '2',
    });
    expect([...perKey.values()]).toEqual([1, 1]);
    const calls = Object.entries(journal)
      .filter(([f]) => !f.startsWith('#'))
      .map(([, v]) => (JSON.parse(v) as { at: number; st: string }).at);
    expect(calls).toEqual([2, 2]);
  } finally {
    if (process.env.STALL_DIAG)
      console.log(`RUNNER0\n${cluster.output('runner', 0)}\nRUNNER1\n${cluster.output('runner', 1)}`);
    wake();
    redis.disconnect();
    await stop();
  }
}, 180_000);
