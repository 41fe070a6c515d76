/**
 * `node test/bench/end3-push.ts` (round 42 `format-next`): what the next release's pushed end
 * (`<id> end3`, services/runs/test/next-end-push.ts: the journal's call entries and sources spliced
 * into the message as JSON values) saves against this release's (`<id> end2`: the same values as
 * JSON strings, escaped) for a waited run with calls: the message's bytes and Redis's instructions
 * of the end script (a redis-server under callgrind, `callgrind-redis.ts`: script calls only). A
 * run of `CALLS` binding calls (each claimed, sent and completed with a result through the call
 * journal, one source) is ended once through the run store, its end script call captured, then
 * replayed `N` times a phase (default 100; every key restored from a DUMP before each call, outside
 * the count), phases end2 / end3 / end3 / end2. `CALLS` a comma list (default `1,20,60`: with these values a 100-call run's journal is over the push's cap). One
 * message of each kind is kept in `OUT` (default /tmp/end3-push.json) with the seal key, for
 * `end3-read.ts` (the gateway's parse). Format 2 (the default). A count: no lock needed.
 * Round 43 (`format-43`): this release writes `end3` itself, so the sides are its end script with
 * the `end3` branch off (`end2`), without its size cut-off (`end3`) and as shipped (`head`); `SIDES`
 * a comma list of phases (default end2,end3,end3,end2).
 */
import { writeFileSync } from 'node:fs';
import { channels, generateSealKey, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { createCallJournal, createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { FINISH_RUN } from '../../services/runs/src/run-store-scripts.ts';
import { NEXT_FINISH_RUN } from '../../services/runs/test/next-end-push.ts';
import { PROGRAM } from './baselines.ts';
import { capturedEnd } from './begun-run.ts';
import { callgrindRedis } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 100);
const CALLS = (process.env.CALLS ?? '1,20,60').split(',').map(Number);
const OUT = process.env.OUT ?? '/tmp/end3-push.json';
type Side = 'end2' | 'end3' | 'head';
/** Phases, each `N` calls (default end2 end3 end3 end2; round 43 also `head`, this release's). */
const SIDES = (process.env.SIDES ?? 'end2,end3,end3,end2').split(',') as Side[];
const PHASES: Record<Side, number> = { end2: 0, end3: 0, head: 0 };
for (const side of SIDES) PHASES[side]++;
/** `MIXED=1`: the first two sides of SIDES call by call instead of in phases (instructions only). */
const MIXED = process.env.MIXED === '1';
const SEAL_KEYS = generateSealKey('k1');
const { r: redis, instructions, stop } = await callgrindRedis('end3-push');
const listener = redis.duplicate();
const messages: string[] = [];
listener.on('message', (_c: string, m: string) => {
  if (/^\S+ end[23] /.test(m)) messages.push(m);
});
const kept: Record<string, Partial<Record<Side, string>>> = {};
try {
  await listener.subscribe(channels.runEvents);
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: SEAL_KEYS });
  const now = Date.now();
  const source = {
    connectionId: 'conn-0001',
    connectionName: 'CRM',
    name: 'find_contact',
    kind: 'tool' as const,
  };
  /** A waited run of `calls` calls ended once: its end's KEYS, ARGV and every key before it. */
  const ended = async (id: string, calls: number) => {
    await redis.flushall();
    const runs = createRunStore(redis, sealer);
    const journal = createCallJournal({ redis, sealer });
    const run = runFixture(id, {
      createdAt: now,
      tenant: 'dev',
      session: 'bench',
      code: PROGRAM,
      pushEnd: true,
    });
    await runs.create(run);
    await journal.beginAttempt(run.id, `islet:run:{${run.id}}`, runs.attemptStartEvent(run.id));
    for (let index = 0; index < calls; index++) {
      await journal.claim(run.id, 1, {
        index,
        binding: 'crm.find_contact',
        argsJson: JSON.stringify({ email: `person${index}@example.com` }),
        source,
        sendNow: true,
      });
      await journal.complete(run.id, index, {
        type: 'result',
        valueJson: JSON.stringify({ id: `c-${index}`, name: 'A Person', tags: ['lead', 'emea'] }),
      });
    }
    const dumps = await Promise.all(
      (await redis.keys('*')).map(async (k) => [k, await redis.dumpBuffer(k)] as const),
    );
    return {
      ...(await capturedEnd(redis, runs, run, now, { bindingCalls: calls, value: calls, timings: false })),
      dumps,
    };
  };
  const restore = async (dumps: (readonly [string, Buffer | null])[]) => {
    const p = redis.pipeline().flushall();
    for (const [k, v] of dumps) if (v) p.restore(k, 0, v, 'REPLACE');
    await p.exec();
  };
  // `head`: this release's end script (`end3` from END3_MIN_BYTES, round 43); `end2`: the same
  // with its `end3` branch off (what a0565cd2 pushes); `end3`: the same with no size floor
  // (`NEXT=1`: round 42's emulation instead, next-end-push.ts, its own build of the message).
  const END2_ONLY = new LuaScript(FINISH_RUN.source.replace('if push == 3 and', 'if false and'));
  const END3_ALWAYS = new LuaScript(FINISH_RUN.source.replace(/ and size >= \d+ and /, ' and '));
  if (END2_ONLY.source === FINISH_RUN.source || END3_ALWAYS.source === FINISH_RUN.source)
    throw new Error("the end script's end3 branch moved");
  const scripts: Record<Side, LuaScript> = {
    end2: END2_ONLY,
    end3: process.env.NEXT === '1' ? NEXT_FINISH_RUN : END3_ALWAYS,
    head: FINISH_RUN,
  };
  for (const calls of CALLS) {
    const end = await ended(`bench-run-${calls}`, calls);
    const totals: Record<Side, number> = { end2: 0, end3: 0, head: 0 };
    const bytes: Record<Side, number> = { end2: 0, end3: 0, head: 0 };
    kept[calls] = {};
    if (MIXED) {
      // The sides call by call (A B, then B A, …), not in phases: a phase's place in the order
      // moved its mean by ~10 k at one call whatever its script (round 43: head, end2, end2, head).
      const [a, b] = [...new Set(SIDES)] as [Side, Side];
      const spent: Record<Side, number[]> = { end2: [], end3: [], head: [] };
      for (const side of [a, b]) {
        await restore(end.dumps);
        await scripts[side].run(redis, end.keys, end.args);
      }
      for (let i = 0; i < N; i++)
        for (const side of i % 2 === 0 ? [a, b] : [b, a]) {
          await restore(end.dumps);
          const before = instructions();
          await redis.evalsha(scripts[side].sha, end.keys.length, ...end.keys, ...end.args);
          spent[side].push(instructions() - before);
        }
      const mean = (x: number[]) => x.reduce((t, v) => t + v, 0) / x.length;
      const half = (x: number[], h: number) => mean(x.slice(h * (x.length >> 1), (h + 1) * (x.length >> 1)));
      console.log(
        `${calls} calls, mixed: ${a} ${mean(spent[a]).toFixed(0)} (halves ${half(spent[a], 0).toFixed(0)} / ${half(spent[a], 1).toFixed(0)}), ${b} ${mean(spent[b]).toFixed(0)} (halves ${half(spent[b], 0).toFixed(0)} / ${half(spent[b], 1).toFixed(0)}) instructions a call: ${(mean(spent[b]) - mean(spent[a])).toFixed(0)}`,
      );
      continue;
    }
    for (const side of SIDES) {
      const script = scripts[side];
      await restore(end.dumps);
      await script.run(redis, end.keys, end.args);
      await new Promise((r) => setTimeout(r, 100));
      messages.length = 0;
      let spent = 0;
      for (let i = 0; i < N; i++) {
        await restore(end.dumps);
        const before = instructions();
        await redis.evalsha(script.sha, end.keys.length, ...end.keys, ...end.args);
        spent += instructions() - before;
      }
      await new Promise((r) => setTimeout(r, 100));
      const ours = messages.filter((m) => / end[23] /.test(m));
      // Over the push's cap (END_PUSH_MAX_BYTES, the journal's stored size): not pushed in either form.
      if (ours.length === 0) {
        console.log(
          `${calls} calls, ${side}: not pushed (over the cap), ${(spent / N).toFixed(0)} instructions a call`,
        );
        continue;
      }
      if (ours.length !== N) throw new Error(`${side}: ${ours.length} of ${N} ends pushed`);
      const tag = / (end[23]) /.exec(ours[0] ?? '')?.[1];
      if (side !== 'head' && tag !== side) throw new Error(`${side}: pushed as ${tag}`);
      kept[calls][side] = ours[0];
      totals[side] += spent / N / PHASES[side];
      bytes[side] += ours.reduce((a, m) => a + Buffer.byteLength(m), 0) / N / PHASES[side];
      console.log(
        `${calls} calls, ${side}: ${(spent / N).toFixed(0)} instructions a call, ${Buffer.byteLength(ours[0]!)} B (${tag})`,
      );
    }
    console.log(
      `${calls} calls: end script, pushed: ${(['end2', 'end3', 'head'] as const).map((x) => `${x} ${totals[x].toFixed(0)} instructions, ${bytes[x].toFixed(0)} B`).join('; ')} (each the mean of its sides)`,
    );
  }
  writeFileSync(OUT, JSON.stringify({ sealKeys: SEAL_KEYS, kept }));
} finally {
  listener.disconnect();
  await stop();
}
process.exit(0);
