/**
 * `node test/bench/decision-life-counts.ts` (round 47, `decision-life`): what a decision costs Redis
 * on the decision store's path — a call's decision requested (new), asked again by a replay
 * (existing), answered; another requested and expired by the expiry sweep (`expireDue`); a third
 * requested and closed with its ended run (`closeRun`). Per step: Redis commands (`INFO
 * commandstats`, by name, `info` left out; a script's own commands counted by name, `evalsha` the
 * call), and Redis's instructions (callgrind, script calls only: `callgrind-redis.ts`), p50. A run
 * with no decision sends none of these (nothing of a run's other path changed). A count: no lock
 * needed. Runs against any tree whose `@islet/*` it resolves (a `git archive` of a base beside).
 */
import { generateSealKey, sealerFromConfig } from '@islet/core';
import { createDecisionStore } from '@islet/runs';
import { callgrindRedis } from './callgrind-redis.ts';

const RUNS = Number(process.env.RUNS ?? 5);
const grind = await callgrindRedis('decision-life-counts');
const redis = grind.r;
const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
let clock = Date.now();
const store = createDecisionStore({
  redis,
  sealer,
  expireAfterMs: 86_400_000,
  ttlSeconds: 3600,
  now: () => clock,
});

type Step = 'request (new)' | 'request (existing)' | 'answer' | 'expire (sweep)' | 'close (ended run)';
const counted = new Map<Step, { ins: number[]; cmds: Map<string, number>; n: number }>();
let measuring = false;
const stats = async () =>
  new Map(
    [...(await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [
      m[1] ?? '',
      Number(m[2]),
    ]),
  );

async function measure<T>(step: Step, body: () => Promise<T>): Promise<T> {
  if (!measuring) return body();
  const before = await stats();
  const ins0 = grind.instructions();
  const out = await body();
  const ins = grind.instructions() - ins0;
  const after = await stats();
  let c = counted.get(step);
  if (!c) {
    c = { ins: [], cmds: new Map(), n: 0 };
    counted.set(step, c);
  }
  c.ins.push(ins);
  c.n++;
  for (const [name, n] of after) {
    const d = n - (before.get(name) ?? 0) - (name === 'info' ? 1 : 0);
    if (d > 0 && name !== 'info') c.cmds.set(name, (c.cmds.get(name) ?? 0) + d);
  }
  return out;
}

const ask = (runId: string) =>
  store.request({
    tenant: 't1',
    mode: 'read-only',
    runId,
    index: 0,
    toolCallId: 'tc',
    code: 'return 1',
    approval: 'stop',
    call: { connectionId: 'bank', tool: 'pay', arguments: { cents: 100 } },
  });

for (let i = 0; i < RUNS + 3; i++) {
  measuring = i >= 3;
  clock = Date.now();
  const a = `answered-${i}`;
  await measure('request (new)', () => ask(a));
  await measure('request (existing)', () => ask(a));
  await measure('answer', () => store.answer('t1', a, 0, { allow: true, by: 'k' }));
  const e = `expired-${i}`;
  await ask(e);
  clock += 86_400_001;
  await measure('expire (sweep)', () => store.expireDue());
  clock = Date.now();
  const c = `closed-${i}`;
  await ask(c);
  await measure('close (ended run)', () => store.closeRun(c));
}

const p50 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;
console.log('| step | commands a decision | by name | Redis instructions p50 |');
console.log('|---|---|---|---|');
for (const [step, c] of counted) {
  const total = [...c.cmds.values()].reduce((s, n) => s + n, 0) / c.n;
  const byName = [...c.cmds]
    .sort(([x], [y]) => x.localeCompare(y))
    .map(([name, n]) => `${name} ${n / c.n}`)
    .join(', ');
  console.log(`| ${step} | ${total} | ${byName} | ${p50(c.ins).toLocaleString('en-US')} |`);
}
await grind.stop();
