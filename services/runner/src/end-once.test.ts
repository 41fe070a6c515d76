/**
 * A run's end on a runner without work done twice (round 48 `engine-timers`), read as identities
 * and flags, never times:
 * - `completingExec` is no `async` wrapper: a completion whose answer was sent early gets that
 *   answer's promise itself, BullMQ's other calls their own promise (f63d2625: a promise of the
 *   wrapper's around each);
 * - a Completed outcome's text is rendered once (the engine's `renderResultText`) and the end says
 *   it is the result's own (`textIsResult`) only when a reader renders the same bytes from the
 *   result; written through a real store, every text reads back byte for byte as the engine's.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { type RunOutcome, renderResultText } from '@islet/engine';
import { createRunStore } from '@islet/runs';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { version } from 'bullmq/dist/esm/version.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completingExec } from './end-complete-store.ts';
import { mapOutcome } from './outcome-mapping.ts';

describe("completingExec's wrapper", () => {
  const completion = (jobId: string) => [
    ...Array.from({ length: moveToFinished.keys }, () => 'k'),
    jobId,
    'x',
  ];

  it("gives a completion sent early that answer's promise itself, and other calls BullMQ's own", async () => {
    const answer = Promise.resolve([0, 0]);
    const own = Promise.resolve('ok');
    const execs: string[] = [];
    const exec = completingExec(
      version,
      (_client, name) => {
        execs.push(name);
        return own;
      },
      () => undefined,
      () => false,
      (jobId) => (jobId === 'j1' ? answer : undefined),
    );
    expect(exec({} as never, 'moveToFinished', completion('j1'))).toBe(answer);
    expect(execs).toEqual([]);
    expect(exec({} as never, 'extendLock', ['a'])).toBe(own);
    // A completion with no end pending and none sent early: BullMQ's call, its answer compared.
    expect(await exec({} as never, 'moveToFinished', completion('j2'))).toBe('ok');
    expect(execs).toEqual(['extendLock', 'moveToFinished']);
  });
});

const outcome = (valueJson: string | undefined, lines: string[] = []): RunOutcome =>
  ({
    status: 'completed',
    ...(valueJson === undefined ? {} : { valueJson }),
    logs: lines.map((text) => ({ level: 'log', text })),
    outputTruncated: false,
    calls: [],
    durationMs: 1,
  }) as RunOutcome;

/** Completed outcomes, and whether a reader renders the engine's text from their result. */
const CASES: [RunOutcome, boolean][] = [
  [outcome(undefined), true],
  [outcome(undefined, ['a', 'b']), true],
  [outcome('1'), true],
  [outcome('"str\\u2028é"', ['printed']), true],
  [outcome('{"a":[1,2,{"b":null}],"c":"d"}'), true],
  [outcome('true'), true],
  [outcome('null', ['x']), true],
  [outcome('-0'), false],
  // JSON that is not JSON.stringify's own (a host's encoder other than Node's): the text differs.
  [outcome('1.0'), false],
  [outcome('{"a" : 1}'), false],
  [outcome('1e2'), false],
];

describe("a Completed run's text", () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it("is the engine's, rendered once, and marked the result's own only when a reader renders the same", async () => {
    const runs = createRunStore(redis, sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') }));
    let i = 0;
    for (const [out, own] of CASES) {
      const mapped = mapOutcome(out);
      if (mapped.kind !== 'final') throw new Error('not final');
      expect(mapped.text).toBe(renderResultText(out));
      expect(mapped.textIsResult).toBe(own);
      const id = `t${i++}`;
      const run = runFixture(id, { tenant: 't1' });
      await runs.create(run);
      expect(
        await runs.finish(run, {
          status: mapped.status,
          result: mapped.result,
          text: mapped.text,
          textIsResult: mapped.textIsResult === true,
          kind: mapped.failureKind,
        }),
      ).toBe(true);
      // Read back byte for byte as the engine rendered it, left out of the record or not.
      expect((await runs.get(id))?.text).toBe(renderResultText(out));
      expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
    }
  });
});
