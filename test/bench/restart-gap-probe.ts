/**
 * round 44 `restart-gap`: a runner restarted by the devstack's restartRunner (SIGKILL, then a new
 * process up to its ready line), and a run submitted at once. Prints the queue's idle
 * registrations just before the submit (whose worker, its expiry), the answer's status, and who ran
 * it. Usage: node test/bench/restart-gap-probe.ts [signal=SIGKILL|SIGTERM] [tries=2]
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';

const signal = (process.argv[2] ?? 'SIGKILL') as NodeJS.Signals;
const tries = Number(process.argv[3] ?? 2);
const c = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'] }] });
const redis = createRedis(c.redisUrl);
const idle = async () => {
  const out: string[] = [];
  for (const key of await redis.keys('*idle'))
    out.push(`${key} ${JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'))} now=${Date.now()}`);
  return out.join('; ') || '(none)';
};
const submit = async () => {
  const t0 = Date.now();
  const res = await fetch(`${c.url}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.devKey}`, 'content-type': 'application/json', prefer: 'wait=30' },
    body: JSON.stringify({ code: 'return 1', description: 'gap', sessionId: 's', turnId: 't', callId: 'c' }),
  });
  const text = await res.text();
  return `${res.status} in ${Date.now() - t0} ms ${text.slice(0, 120)}`;
};
try {
  console.log('warm:', await submit());
  for (let i = 0; i < tries; i++) {
    console.log('idle before kill:', await idle());
    if (signal === 'SIGKILL') await c.restartRunner(0);
    else {
      await c.killRunner(0, signal);
      console.log('idle after', signal, ':', await idle());
      await c.restartRunner(0);
    }
    console.log(`restart ${i + 1}: idle at ready:`, await idle());
    console.log(`restart ${i + 1}: submit:`, await submit());
    console.log('idle after:', await idle());
  }
} finally {
  redis.disconnect();
  await c.stop();
}
