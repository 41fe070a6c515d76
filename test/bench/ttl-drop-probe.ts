/**
 * round 47 `live-check-on` (3): what a previous release's gateway (6b60376a by default) does with an
 * idle registration that lacks begin-attempt's TTL argument (the journal's expiry, compact element
 * 9: `startArgs[17]`, unread by begin-attempt.lua since round 46). Runs that release's processes
 * (test/e2e/previous-release.ts: one gateway, one read-only runner) and, before each submit, puts in
 * place of its idle runner's registration (idle:args) a variant of it: `as-is` (the registration
 * its runner wrote), `same-id` (the compact array without element 9, its layout id kept), `new-id`
 * (the same without element 9, the id of another layout), `full-no-ttl` (the full form with
 * startArgs[17] removed), `empty` (element 9 kept, its value ""). Then a waited submit through that
 * release's gateway under MONITOR: the HTTP answer, whether its script handed the job (a push to the
 * worker's hand-off key), the run's status and attempts, the gateway's log lines after it.
 * Counts and answers, not a time. Usage: node test/bench/ttl-drop-probe.ts [rev=6b60376a] [rev's own gateway|head]
 */
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { previousRelease } from '../e2e/previous-release.ts';

const rev = process.argv[2] ?? '6b60376a';
const QUEUE = 'islet:{runs-read-only}:';
const release = await previousRelease(rev);
const c = await release.startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'] }],
  env: { ISLET_SANDBOX_JAIL: 'off' },
});
// This checkout's gateway beside it (the same Redis and secrets): the head's reading of the same variants.
const shared = ['ISLET_SEAL_KEYS', 'ISLET_INTERNAL_TOKEN', 'ISLET_JOURNAL_ARGS_KEY', 'ISLET_WORKSPACE_ROOT'];
const head = await startCluster({
  redisUrl: c.redisUrl,
  gateways: 1,
  runners: [],
  env: Object.fromEntries(shared.map((n) => [n, c.env[n] as string])),
});
const redis = createRedis(c.redisUrl);
const submit = async (url: string, key: string, i: number) => {
  const res = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=30' },
    body: JSON.stringify({
      code: `return ${i}`,
      description: 'ttl',
      sessionId: 's',
      turnId: 't',
      callId: `c${i}`,
    }),
  });
  return { status: res.status, text: await res.text() };
};
const variants: Record<string, (stored: string) => string> = {
  'as-is': (s) => s,
  'same-id': (s) => {
    const a = JSON.parse(s) as unknown[];
    a.splice(8, 1);
    return JSON.stringify(a);
  },
  'new-id': (s) => {
    const a = JSON.parse(s) as unknown[];
    a.splice(8, 1);
    a[0] = 'h3:0123456789abcdef';
    return JSON.stringify(a);
  },
  empty: (s) => {
    const a = JSON.parse(s) as unknown[];
    a[8] = '';
    return JSON.stringify(a);
  },
};
try {
  console.log('warm:', (await submit(c.url, c.devKey, 0)).status);
  let i = 1;
  for (const through of ['prev', 'head'] as const) {
    const g = through === 'prev' ? c : head;
    for (const [name, make] of Object.entries(variants)) {
      let worker: string | undefined;
      let stored: string | null = null;
      while (stored === null) {
        worker = (await redis.zrange(`${QUEUE}idle`, -1, -1))[0];
        stored = worker ? await redis.hget(`${QUEUE}idle:args`, worker) : null;
        if (stored === null) await new Promise((r) => setTimeout(r, 20));
      }
      const put = make(stored);
      await redis.hset(`${QUEUE}idle:args`, worker!, put);
      const watcher = createRedis(c.redisUrl);
      const monitor = await watcher.monitor();
      let pushes = 0;
      const errs: string[] = [];
      monitor.on('monitor', (_t: string, args: string[], source: string) => {
        if (source === 'lua' && args[0]?.toLowerCase() === 'zadd' && /:handoff:[^:]+$/.test(args[1] ?? ''))
          pushes++;
      });
      const logBefore = g.output('gateway', 0).length;
      const res = await submit(g.url, c.devKey, i++);
      await new Promise((r) => setTimeout(r, 200));
      monitor.disconnect();
      watcher.disconnect();
      let id: string | undefined;
      try {
        id = (JSON.parse(res.text) as { id?: string }).id;
      } catch {}
      let status = '?';
      if (res.status >= 500 || !id) {
        // the run's id is not in a failed answer: the latest run's record of the tenant is read below
      } else status = (JSON.parse(res.text) as { status: string }).status;
      for (const line of g.output('gateway', 0).slice(logBefore).split('\n'))
        if (line.trim()) errs.push(line.slice(0, 400));
      const jobs = await redis.zrange(`${QUEUE}completed`, -1, -1);
      const done = await redis.zcard(`${QUEUE}completed`);
      console.log(
        `${through} gateway, ${name}: registration ${put.length} B (as written ${stored.length} B); HTTP ${res.status} ${res.text.slice(0, 160)}; status ${status}; handed ${pushes}; last completed job ${jobs[0]} ats ${jobs[0] ? await redis.hget(`${QUEUE}${jobs[0]}`, 'ats') : '-'}; jobs completed so far ${done} of ${i} submitted`,
      );
      for (const e of errs) console.log(`  log: ${e}`);
      // The run to its end (a failed submit's job was added before the script failed: fetched).
      await new Promise((r) => setTimeout(r, 1500));
    }
  }
  console.log('jobs completed at the end:', await redis.zcard(`${QUEUE}completed`), 'of', i, 'submitted');
} finally {
  redis.disconnect();
  await head.stop();
  await c.stop();
  release.remove();
}
