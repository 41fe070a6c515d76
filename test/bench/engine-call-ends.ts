/**
 * `node test/bench/engine-call-ends.ts` (round 39, `call-end`): a binding call at a run's ends
 * against one inside it, in the engine alone (a sandbox host, its fresh isolate a run, an `onCall`
 * that answers at once; no runner, gateway or Redis), on this process's clock. Runs interleaved (each kind twice
 * in a row, the second read), `RUNS` of each (default 200, p50s): the trivial program (`bindings: ['t']` declared, no call),
 * and `CALLS` sequential calls (default 20). Read: execute → the first call's arrival, a call's
 * answer → the next arrival (a cycle inside the run), the last answer → execute returned, against
 * the trivial run's execute → returned. What the first and last calls cost above a cycle is
 * (first + last − trivial) − one cycle.
 */
import { createEngine } from '@islet/engine';
import { pct } from './baselines.ts';

const RUNS = Number(process.env.RUNS ?? 200);
const CALLS = Number(process.env.CALLS ?? 20);
const engine = createEngine({ maxHostResidentGrowthBytes: 2 ** 40 });
const answer = { type: 'result' as const, valueJson: '{"n":1}' };
const calls = `let n = 0; for (let i = 0; i < ${CALLS}; i++) n += (await t({ i })).n; return n;`;
let arrived: number[] = [];
let answered: number[] = [];
const run = async (code: string) => {
  arrived = [];
  answered = [];
  const t0 = performance.now();
  const out = await engine.execute(code, {
    bindings: ['t'],
    limits: { timeoutMs: 60_000 },
    partition: 'bench',
    onCall: async () => {
      arrived.push(performance.now());
      answered.push(performance.now());
      return answer;
    },
  });
  if (out.status !== 'completed') throw new Error(JSON.stringify(out));
  return { t0, t1: performance.now() };
};
try {
  for (let i = 0; i < 30; i++) {
    await run('return 1');
    await run(calls);
  }
  const trivial: number[] = [];
  const first: number[] = [];
  const last: number[] = [];
  const cycle: number[] = [];
  /** By position: answer k → arrival k + 1 (the first is the run's first delivery into its isolate). */
  const byPosition: number[][] = [];
  // Each kind twice in a row (AABB), the second of each read: a run after one of its own kind.
  for (let i = 0; i < RUNS; i++) {
    await run('return 1');
    const t = await run('return 1');
    trivial.push(t.t1 - t.t0);
    await run(calls);
    const c = await run(calls);
    first.push(arrived[0]! - c.t0);
    last.push(c.t1 - answered.at(-1)!);
    for (let k = 1; k < arrived.length; k++) {
      cycle.push(arrived[k]! - answered[k - 1]!);
      byPosition[k - 1] = [...(byPosition[k - 1] ?? []), arrived[k]! - answered[k - 1]!];
    }
  }
  const p = (xs: number[]) => pct(xs, 50);
  console.log(
    `p50 ms (${RUNS} runs each, interleaved): trivial execute ${p(trivial).toFixed(3)}; with ${CALLS} calls: execute → 1st call ${p(first).toFixed(3)}, a cycle inside ${p(cycle).toFixed(3)}, last answer → returned ${p(last).toFixed(3)}`,
  );
  console.log(
    `a cycle by position (answer k → arrival k + 1), p50 ms: ${byPosition.map((xs, k) => `${k + 1}→${k + 2} ${p(xs).toFixed(3)}`).join(', ')}`,
  );
  console.log(`the ends above one cycle: ${(p(first) + p(last) - p(trivial) - p(cycle)).toFixed(3)} ms`);
} finally {
  await engine.close();
}
