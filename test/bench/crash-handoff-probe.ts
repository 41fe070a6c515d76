/**
 * round 45 `crash-handoff`: the cost of a runner crash to the run handed to its idle registration.
 * Each try: the runner registered idle, SIGKILLed, a run submitted at once (no wait) through the
 * gateway, the runner restarted (the devstack's restartRunner), the run followed to its end. Prints
 * a row a try: whether the job was handed to the killed worker (its lock's token), the submit → end
 * delay (ms, the record read every 50 ms), the job's way back (BullMQ's events: `stalled` or the
 * gateway's take-back), its `stc` and `ats`; then the delays' list. Not a timed claim: one run each
 * (a count and a distribution), the delay being seconds apart between the two ways.
 * With `runners` 2 the other runner stays up: the run is taken by it, so the delay is the crash's
 * own cost, not the restart's; a try counts as handed to the killed worker when the answer was still
 * on that worker's hand-off key after the submit (a live worker's pop takes it in the add's turn).
 * `rev`: that release's processes instead (test/e2e/previous-release.ts, e.g. 9ec25e04: the base).
 * `LIVE=on` (round 46 `takeback`): the gateway checks the registration's liveness
 * (ISLET_HANDOFF_LIVE_CHECK=on): a dead worker's registration is dropped by the add, not handed.
 * Usage: [LIVE=on] node test/bench/crash-handoff-probe.ts [tries=5] [runners=1] [rev]
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { previousRelease } from '../e2e/previous-release.ts';

const tries = Number(process.argv[2] ?? 5);
const runners = Number(process.argv[3] ?? 1);
const QUEUE = 'islet:{runs-read-only}:';
const release = process.argv[4] ? await previousRelease(process.argv[4]) : undefined;
const c = await (release?.startCluster ?? startCluster)({
  gateways: 1,
  runners: Array.from({ length: runners }, () => ({ modes: ['read-only' as const] })),
  // A previous release's sandbox hosts outside the kernel launcher (as test/e2e/mixed-releases.ts):
  // the launcher's view of the file system is this checkout's.
  env: {
    ...(release ? { ISLET_SANDBOX_JAIL: 'off' } : {}),
    ...(process.env.LIVE ? { ISLET_HANDOFF_LIVE_CHECK: process.env.LIVE } : {}),
  },
});
const redis = createRedis(c.redisUrl);
const submit = async (prefer?: string) => {
  const res = await fetch(`${c.url}/v1/runs`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${c.devKey}`,
      'content-type': 'application/json',
      ...(prefer ? { prefer } : {}),
    },
    body: JSON.stringify({
      code: 'return 1',
      description: 'crash',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
    }),
  });
  return (await res.json()) as { id: string; status: string };
};
const events = async (id: string) => {
  const out: string[] = [];
  for (const [, f] of await redis.xrange(`${QUEUE}events`, '-', '+')) {
    const o: Record<string, string> = {};
    for (let i = 0; i + 1 < f.length; i += 2) o[f[i] as string] = f[i + 1] as string;
    if (o.jobId === id) out.push(o.prev ? `${o.event}<-${o.prev}` : String(o.event));
  }
  return out.join(',');
};
const delays: number[] = [];
try {
  console.log('warm:', (await submit('wait=30')).status);
  for (let i = 0; i < tries; i++) {
    while ((await redis.zcard(`${QUEUE}idle`)) < runners) await new Promise((r) => setTimeout(r, 20));
    const killed = (await redis.zrange(`${QUEUE}idle`, -1, -1))[0];
    await c.killRunner(0, 'SIGKILL');
    const t0 = Date.now();
    const { id } = await submit();
    const lock = await redis.get(`${QUEUE}${id}:lock`);
    const worker = lock?.split(':h:')[0];
    const lingering = worker ? await redis.exists(`${QUEUE}handoff:${worker}`) : 0;
    const restart = runners > 1 ? Promise.resolve() : c.restartRunner(0);
    let status = 'Queued';
    while (status === 'Queued' || status === 'Running') {
      await new Promise((r) => setTimeout(r, 50));
      const r = await fetch(`${c.url}/v1/code-runs/${id}`, {
        headers: { authorization: `Bearer ${c.devKey}` },
      });
      status = ((await r.json()) as { status: string }).status;
    }
    const ms = Date.now() - t0;
    await restart;
    if (runners > 1) await c.restartRunner(0);
    delays.push(ms);
    const job = await redis.hmget(`${QUEUE}${id}`, 'stc', 'ats');
    console.log(
      `try ${i + 1}: handed to a dead worker ${lingering === 1} (lock ${lock}; latest before the kill ${killed}); ${status} ${ms} ms after the submit; events ${await events(id)}; stc ${job[0]} ats ${job[1]}`,
    );
  }
  console.log('delays ms:', delays.join(' '), '| sorted:', [...delays].sort((a, b) => a - b).join(' '));
} finally {
  redis.disconnect();
  await c.stop();
  release?.remove();
}
