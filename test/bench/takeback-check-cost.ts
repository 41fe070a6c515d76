/**
 * `node test/bench/takeback-check-cost.ts`: Redis's instructions of the hand-off liveness check
 * alone (@islet/runs handoff-live.ts `LIVE_CHECK`'s loop test: the channel's name made from the
 * idle key and the worker id, `redis.call('PUBSUB', 'NUMSUB', ..)`, its answer read), round 46
 * `takeback`. takeback-counts.ts' whole handed run moves by ±5 k instructions between two sides of
 * one setting, more than the check; here one EVAL makes `N` (default 10000) checks of a held channel
 * (a subscriber on it, as a live worker's) against one that makes the same names without the call,
 * each on its own redis-server under callgrind collecting inside `evalGenericCommand`; the
 * difference / N is the check's cost a handed submit. Sides in the order `SIDES` (default
 * "without with with without"). Counts: no bench lock needed.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import { callgrindRedisAt } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 10000);
const SIDES = (process.env.SIDES ?? 'without with with without').split(' ');
const out = `/tmp/takeback-check-cost/${Date.now()}`;
mkdirSync(out, { recursive: true });
const IDLE = 'islet:{runs-read-only}:idle';
const WORKER = '0f4c6a0e-6a43-4a55-9f3e-2d7d1c1b9a11';

const script = (withCall: boolean) => `local idleKey, worker, n, live = KEYS[1], ARGV[1], tonumber(ARGV[2]), 0
for i = 1, n do
  local handOffPrefix = string.sub(idleKey, 1, -5) .. 'handoff:'
  ${withCall ? "if redis.call('PUBSUB', 'NUMSUB', handOffPrefix .. worker)[2] ~= 0 then live = live + 1 end" : 'if #(handOffPrefix .. worker) ~= 0 then live = live + 1 end'}
end
return live`;

const totals: Record<string, number[]> = {};
for (const [i, side] of SIDES.entries()) {
  const file = `${out}/${i}-${side}.callgrind`;
  const cg = await callgrindRedisAt('evalGenericCommand', file);
  const r = new Redis(cg.url);
  const sub = new Redis(cg.url);
  try {
    await sub.subscribe(`${IDLE.slice(0, -4)}handoff:${WORKER}`);
    const live = await r.eval(script(side === 'with'), 1, IDLE, WORKER, N);
    if (Number(live) !== N) throw new Error(`${side}: ${live} of ${N} checks found the channel held`);
  } finally {
    sub.disconnect();
    r.disconnect();
    await cg.stop();
  }
  const text = execFileSync('callgrind_annotate', [file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const total = Number(/([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS/.exec(text)?.[1]?.replaceAll(',', ''));
  totals[side] = [...(totals[side] ?? []), total];
  console.log(`${side}: ${total} instructions in the EVAL of ${N} (${file})`);
}
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const w = totals.with ?? [];
const wo = totals.without ?? [];
console.log(
  `the check a submit: ${((mean(w) - mean(wo)) / N).toFixed(0)} instructions (with ${w.join(' ')}; without ${wo.join(' ')}; N=${N})`,
);
process.exit(0);
