/**
 * What a hand-off test reads of the shared Redis and a gateway (handoff-terms-mixed, handoff-compact,
 * live-check-mixed, crash-handoff, crash-handoff-live): the idle registrations as stored, whether a
 * submit handed its job (the submit's script pushed the fetch's answer to a worker's hand-off key: a
 * `ZADD …:handoff:<worker>` a script sent, MONITOR), a worker's live channel, a job's BullMQ events,
 * the gateway's take-back counter and a run followed to its end; and the two crash-handoff files'
 * shared set-ups and their one shared case (a killed runner's registration beside the check).
 */
import { createRedis, keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, expect } from 'vitest';
import { call, type MixedReleases, startMixed } from './mixed-releases.ts';

type Redis = ReturnType<typeof createRedis>;
/** The read-only mode's BullMQ queue prefix (its keys `<QUEUE><jobId>`, `<QUEUE>events`, ...). */
export const QUEUE = 'islet:{runs-read-only}:';
export const IDLE = `${QUEUE}idle`;
const IDLE_ARGS = `${QUEUE}idle:args`;

/**
 * Call inside a describe: its hooks start one gateway and one read-only runner (devstack) with `env`
 * and a Redis client of theirs, given to `set` once up, and stop them after (`set(undefined)`).
 */
export function oneRunnerCluster(
  env: Record<string, string>,
  set: (started: { cluster: Cluster; redis: Redis } | undefined) => void,
): void {
  let started: { cluster: Cluster; redis: Redis } | undefined;
  beforeAll(async () => {
    const cluster = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'] }], env });
    started = { cluster, redis: createRedis(cluster.redisUrl) };
    set(started);
  }, 120_000);
  afterAll(async () => {
    started?.redis.disconnect();
    set(undefined);
    await started?.cluster.stop();
  });
}

/** The latest idle registration's worker id, once there is one. */
export async function registered(redis: Redis): Promise<string> {
  for (;;) {
    const w = (await redis.zrange(IDLE, -1, -1))[0];
    if (w !== undefined) return w;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Subscribers of `worker`'s live channel (its runner's subscription, @islet/runs handoff-live.ts). */
export const holders = async (redis: Redis, worker: string) =>
  Number(((await redis.pubsub('NUMSUB', `${QUEUE}handoff:${worker}`)) as [string, number])[1]);

/** The job's events in BullMQ's stream, as `event` or `event<-prev`. */
export async function jobEvents(redis: Redis, jobId: string): Promise<string[]> {
  const out: string[] = [];
  for (const [, flat] of await redis.xrange(`${QUEUE}events`, '-', '+')) {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i] as string] = flat[i + 1] as string;
    if (f.jobId === jobId) out.push(f.prev ? `${f.event}<-${f.prev}` : String(f.event));
  }
  return out;
}

/** The gateway's islet_handoff_reclaims_total of the read-only mode, as its /metrics shows it (0: no series). */
export async function reclaimsCounted(gateway: { url: string }): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('islet_handoff_reclaims_total{') && l.includes('mode="read-only"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Run `id`'s status on `c`'s gateway once it is neither Queued nor Running. */
export async function followed(c: Cluster, id: string): Promise<string> {
  for (;;) {
    const read = await call(c.url, c.devKey, 'GET', `/v1/code-runs/${id}`);
    const { status } = JSON.parse(read.text) as { status: string };
    if (status !== 'Running' && status !== 'Queued') return status;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The registrations standing once one stands (an idle worker registered before its pop). */
export async function registrations(redis: Redis): Promise<string[]> {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    if ((await redis.zcard(IDLE)) > 0) {
      const stored = await redis.hvals(IDLE_ARGS);
      if (stored.length > 0) return stored;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no idle registration');
}

/** Runs `submit` under MONITOR; the hand-off pushes a script sent while it ran. */
export async function handOffsDuring<T>(
  redisUrl: string,
  submit: () => Promise<T>,
): Promise<{ result: T; pushes: number }> {
  const watcher = createRedis(redisUrl);
  // ioredis takes the MONITOR lines that arrive in the same read as MONITOR's OK (before its status is
  // `monitoring`) for replies without a command ("Command queue state error", 'error' events emitted
  // before `watcher.monitor()` resolves: unhandled, they failed live-check-mixed and handoff-terms-mixed
  // at load 15). So the listeners go on before the connection: such lines, all before the submit, are
  // dropped; a push line lost would read 0 pushes, a failure, never a false hand-off.
  const monitor = watcher.duplicate({ monitor: true, lazyConnect: true });
  monitor.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    monitor.once('monitoring', () => resolve());
    monitor.connect().catch(reject);
  });
  let pushes = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' && args[0]?.toLowerCase() === 'zadd' && /:handoff:[^:]+$/.test(args[1] ?? ''))
      pushes++;
  });
  try {
    const result = await submit();
    // MONITOR's lines come on their own connection: those of the submit arrive before its answer's
    // effects are read here, but give them a moment.
    await new Promise((r) => setTimeout(r, 100));
    return { result, pushes };
  } finally {
    monitor.disconnect();
    watcher.disconnect();
  }
}

/** The registration's form: the full form is a JSON object, the compact one an array. */
export function formOf(stored: string): 'full' | 'compact' {
  const parsed = JSON.parse(stored) as unknown;
  expect(typeof parsed).toBe('object');
  return Array.isArray(parsed) ? 'compact' : 'full';
}

/** Submits `return 1` on `c`'s gateway (`Prefer: <prefer>` when given): the answer's status and body. */
export async function submitOne(c: Cluster, description: string, sessionId: string, prefer?: string) {
  const res = await call(
    c.url,
    c.devKey,
    'POST',
    '/v1/runs',
    { code: 'return 1', description, sessionId, turnId: 't', callId: 'c' },
    prefer ? { prefer } : {},
  );
  return { status: res.status, body: JSON.parse(res.text) as { id: string; status: string } };
}

/**
 * Call inside a describe: its hooks start `previous`'s release beside this one's (startMixed, this
 * release's gateway with `headEnv`) and stop this release's runner (SIGTERM: its close removes its
 * registration), so the previous release's runner is the one registered idle; the releases are
 * given to `set` once up, and stopped after.
 */
export function previousRunnerOnly(
  previous: string,
  headEnv: Record<string, string>,
  set: (mixed: MixedReleases) => void,
): void {
  let mixed: MixedReleases | undefined;
  beforeAll(async () => {
    mixed = await startMixed(previous, headEnv);
    set(mixed);
    await mixed.head.killRunner(0, 'SIGTERM');
  }, 180_000);
  afterAll(async () => {
    await mixed?.stop();
  });
}

/**
 * A runner (its only one) killed (SIGKILL) while registered idle beside `c`'s gateway checking the
 * registration's liveness: the runner holds its live channel while alive and none once Redis read its
 * closed connections; its registration still stands (seconds off its expiry: what a gateway without
 * the check hands a job), yet the next submit is not handed (no lock, the registration dropped by the
 * add); the restarted runner fetches the job and runs it once: its first attempt, never moved back
 * from active, never stalled, nothing taken back (the gateway's take-back counter and log unchanged).
 */
export async function killedRunnerTakesNoSubmit(
  c: Cluster,
  redis: Redis,
  submit: (c: Cluster, prefer?: string) => Promise<{ status: number; body: { id: string; status: string } }>,
): Promise<void> {
  expect((await submit(c, 'wait=30')).body.status).toBe('Completed');
  const before = await reclaimsCounted(c);
  const killed = await registered(redis);
  // A live worker holds its channel.
  expect(await holders(redis, killed)).toBe(1);
  await c.killRunner(0, 'SIGKILL');
  while ((await holders(redis, killed)) !== 0) await new Promise((r) => setTimeout(r, 20));
  expect(await redis.zscore(IDLE, killed)).not.toBeNull();
  const { status, body } = await submit(c);
  expect(status).toBe(202);
  const id = body.id;
  expect(await redis.get(`${QUEUE}${id}:lock`)).toBeNull();
  expect(await redis.zscore(IDLE, killed)).toBeNull();
  await c.restartRunner(0);
  expect(await followed(c, id)).toBe('Completed');
  const seen = await jobEvents(redis, id);
  expect(seen).not.toContain('waiting<-active');
  expect(seen).not.toContain('stalled');
  expect(await redis.hget(`${QUEUE}${id}`, 'ats')).toBe('1');
  expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
  expect(await reclaimsCounted(c)).toBe(before);
  expect(c.output('gateway', 0)).not.toContain('handed job taken back');
}
