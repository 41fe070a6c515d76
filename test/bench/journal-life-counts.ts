/**
 * `node test/bench/journal-life-counts.ts` (round 46, `journal-life`): what a binding call's journal
 * steps and a run's end cost Redis on the production path — a run created and begun as a runner
 * begins its first attempt (no `#attempt`: the journal is created by the first claim), its calls
 * claimed (`sendNow`) and completed with their one-seal `call` event one at a time, then ended
 * pushed; and a trivial run (no call) ended pushed and not pushed (`sentNoCall`). One redis-server
 * under callgrind (`callgrind-redis.ts`: script calls only). Prints, per step: Redis commands
 * (`INFO commandstats`, by name, `info` left out), the script's arguments (keys + ARGV, from the
 * request as sent) and Redis's instructions (p50 and mean). (test/bench/journal-cost.ts begins its
 * runs with `nextAttempt`, so its claims skip what a first attempt's do.) A count: no lock needed.
 * Runs against any tree whose `@islet/*` it resolves (ab.sh, or a `git archive` of a base beside).
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { createCallJournal, createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { callgrindRedis } from './callgrind-redis.ts';

const RUNS = Number(process.env.RUNS ?? 5);
const CALLS = Number(process.env.CALLS ?? 10);
const grind = await callgrindRedis('journal-life-counts');
const redis = grind.r;

type Step = 'claim' | 'complete' | 'end (calls, pushed)' | 'trivial end, pushed' | 'trivial end, not pushed';
const counted = new Map<Step, { ins: number[]; cmds: Map<string, number>; args: number; n: number }>();
let measuring = false;
const stats = async () =>
  new Map(
    [...(await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
// The arguments of every EVALSHA sent (keys and ARGV, past the sha and key count).
let sentArgs = 0;
const send = redis.sendCommand.bind(redis);
redis.sendCommand = ((command: { name: string; args: unknown[] }) => {
  if (command.name === 'evalsha') sentArgs += command.args.length - 2;
  return send(command as never);
}) as typeof redis.sendCommand;

async function measure<T>(step: Step, body: () => Promise<T>): Promise<T> {
  if (!measuring) return body();
  const before = await stats();
  const args0 = sentArgs;
  const ins0 = grind.instructions();
  const out = await body();
  const ins = grind.instructions() - ins0;
  const after = await stats();
  let c = counted.get(step);
  if (!c) {
    c = { ins: [], cmds: new Map(), args: 0, n: 0 };
    counted.set(step, c);
  }
  c.ins.push(ins);
  c.args += sentArgs - args0;
  c.n++;
  for (const [name, n] of after) {
    const d = n - (before.get(name) ?? 0) - (name === 'info' ? 1 : 0);
    if (d > 0 && name !== 'info') c.cmds.set(name, (c.cmds.get(name) ?? 0) + d);
  }
  return out;
}

try {
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const runs = createRunStore(redis, sealer, { callOneSeal: true });
  const journal = createCallJournal({ redis, sealer });
  const source = {
    connectionId: 'conn-b2f9befdbca4',
    connectionName: 'Bench',
    name: 'ping',
    kind: 'tool' as const,
  };
  const result = { type: 'result' as const, valueJson: '{"ok":true}' };
  const end = {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, value: 1, logs: [] },
    text: '1',
  };
  const begun = async (id: string) => {
    const run = runFixture(id, { tenant: 't1' });
    await runs.create(run);
    await journal.beginAttempt(id, keys.run(id));
    return run;
  };
  const callingRun = async (id: string) => {
    const run = await begun(id);
    for (let i = 0; i < CALLS; i++) {
      const started = process.hrtime.bigint();
      await measure('claim', () =>
        journal.claim(id, 1, {
          index: i,
          binding: 'bench.ping',
          argsJson: `{"i":${i}}`,
          source,
          sendNow: true,
        }),
      );
      const event = runs.callEvent(id, () => ({}), started);
      await measure('complete', () => journal.complete(id, i, result, event));
    }
    await measure('end (calls, pushed)', () => runs.finish({ ...run, pushEnd: true }, end));
  };
  const trivialRun = async (id: string, pushEnd: boolean) => {
    const run = await begun(id);
    await measure(pushEnd ? 'trivial end, pushed' : 'trivial end, not pushed', () =>
      runs.finish({ ...run, pushEnd }, { ...end, sentNoCall: true }),
    );
  };
  for (let r = 0; r < 3; r++) {
    await callingRun(`warm-${r}`);
    await trivialRun(`warm-t-${r}`, true);
    await trivialRun(`warm-u-${r}`, false);
  }
  measuring = true;
  for (let r = 0; r < RUNS; r++) {
    await callingRun(`run-${r}`);
    await trivialRun(`trivial-p-${r}`, true);
    await trivialRun(`trivial-u-${r}`, false);
  }
  measuring = false;
  for (const [step, c] of counted) {
    const sorted = [...c.ins].sort((a, b) => a - b);
    const mean = c.ins.reduce((a, b) => a + b, 0) / c.ins.length;
    const cmds = [...c.cmds].map(([name, n]) => `${name} ${(n / c.n).toFixed(2)}`).join(', ');
    const total = [...c.cmds.values()].reduce((a, b) => a + b, 0) / c.n;
    console.log(
      `${step} (${c.n}): ${total.toFixed(2)} commands (${cmds}); ${(c.args / c.n).toFixed(2)} script arguments; ` +
        `Redis instructions p50 ${sorted[sorted.length >> 1]}, mean ${mean.toFixed(0)}`,
    );
  }
} finally {
  await grind.stop();
}
