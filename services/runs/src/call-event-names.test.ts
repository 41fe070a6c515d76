// Round 47 (`gateway-cpu`): a one-seal `call` event's stream key and wake-up text are kept for the
// run whose calls come in a row (run-reads.ts `callEventNames`), and so is the outcome group's key
// made of them (call-journal.ts `eventGroupOf`). A guard of both: runs' calls interleaved, in one
// turn and one after another, each event lands in its own run's stream with its own run's wake-up,
// each outcome in its own journal, whatever run came last. Passes on 6b60376a too (the same
// behaviour, the strings made each call there).
import { channels, createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import type { BindingOutcome } from '@islet/protocol';
import { startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallJournal } from './call-journal.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
let server: Awaited<ReturnType<typeof startRedis>>;
let redis: ReturnType<typeof createRedis>;
let sub: ReturnType<typeof createRedis>;
const heard: string[] = [];
beforeAll(async () => {
  server = await startRedis();
  redis = createRedis(server.url);
  sub = createRedis(server.url);
  await sub.subscribe(channels.runProgress);
  sub.on('message', (_channel: string, message: string) => heard.push(message));
});
afterAll(async () => {
  sub.disconnect();
  redis.disconnect();
  await server.stop();
});

const outcomeOf = (runId: string, index: number): BindingOutcome => ({
  type: 'result',
  valueJson: JSON.stringify({ runId, index }),
});

describe("a call event's names and its outcome group, kept for a run's calls in a row", () => {
  it("puts each run's events and outcomes in its own stream and journal, runs interleaved", async () => {
    const journal = createCallJournal({ redis, sealer });
    const store = createRunStore(redis, sealer, { callOneSeal: true });
    const runs = ['names-a', 'names-b', 'names-c'];
    // Claimed together; then completed A, A, B, A, C, C, B (one turn), then one at a time.
    const order = ['names-a', 'names-a', 'names-b', 'names-a', 'names-c', 'names-c', 'names-b'];
    const next = new Map<string, number>();
    const calls = order.map((runId) => {
      const index = next.get(runId) ?? 0;
      next.set(runId, index + 1);
      return { runId, index };
    });
    const claim = ({ runId, index }: { runId: string; index: number }) =>
      journal.claim(runId, 1, { index, binding: 'b.x', argsJson: '{}', sendNow: true });
    const complete = ({ runId, index }: { runId: string; index: number }) => {
      const started = process.hrtime.bigint();
      return journal.complete(runId, index, outcomeOf(runId, index), store.callEvent(runId, {}, started));
    };
    for (const c of await Promise.all(calls.map(claim))) expect(c.kind).toBe('new');
    for (const done of await Promise.all(calls.map(complete))) expect(done.stored).toBe(true);
    // One after another, the last run's names kept between them.
    const later = [
      { runId: 'names-b', index: 2 },
      { runId: 'names-a', index: 3 },
      { runId: 'names-b', index: 3 },
    ];
    for (const c of later) {
      expect((await claim(c)).kind).toBe('new');
      expect((await complete(c)).stored).toBe(true);
    }
    const all = [...calls, ...later];
    for (const runId of runs) {
      const mine = all.filter((c) => c.runId === runId).map((c) => c.index);
      const stream = (await redis.xrange(keys.runEvents(runId), '-', '+')) as [string, string[]][];
      expect(stream.map(([, f]) => f.slice(0, 4))).toEqual(mine.map((i) => ['type', 'call', 'i', String(i)]));
      const views = await journal.listCalls(runId);
      expect(views.map((v) => [v.index, v.outcome])).toEqual(mine.map((i) => [i, outcomeOf(runId, i)]));
    }
    // Each run's wake-ups name that run: one a group or a call, never another run's.
    await new Promise((r) => setTimeout(r, 50));
    expect(new Set(heard)).toEqual(new Set(runs.map((runId) => `${runId} call`)));
  });
});
