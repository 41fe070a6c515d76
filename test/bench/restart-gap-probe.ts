/**
 * round 44 `restart-gap`: a runner restarted by the devstack's restartRunner (SIGKILL, then a new
 * process up to its ready line), and a run submitted at once. Prints the queue's idle
 * registrations just before the submit (whose worker, its expiry), the answer's status, and who ran
 * it. Usage: node test/bench/restart-gap-probe.ts [signal=SIGKILL|SIGTERM|crash] [tries=2]; `crash`:
 * SIGKILL, the submit sent at once while the runner restarts, and the run followed to its end.
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';

const signal = (process.argv[2] ?? 'SIGKILL') as NodeJS.Signals | 'crash';
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
    if (signal === 'crash') {
      await c.killRunner(0, 'SIGKILL');
      const restart = c.restartRunner(0);
      const t0 = Date.now();
      const answer = await submit();
      console.log(`crash ${i + 1}: submit during the restart:`, answer);
      const id = /"id":"([^"]+)"/.exec(answer)?.[1];
      for (;;) {
        const r = await fetch(`${c.url}/v1/code-runs/${id}`, {
          headers: { authorization: `Bearer ${c.devKey}` },
        });
        const st = ((await r.json()) as { status: string }).status;
        if (st !== 'Running' && st !== 'Queued') {
          console.log(`crash ${i + 1}: ${st} ${Date.now() - t0} ms after the submit`);
          break;
        }
        await new Promise((res) => setTimeout(res, 250));
      }
      await restart;
      continue;
    }
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
