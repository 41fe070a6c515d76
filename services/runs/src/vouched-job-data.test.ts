/**
 * The fused fetch's start reading a job data text its embedding script vouches for (KNOWN_JOB,
 * KNOWN_TENANT: the hand-off's add inside a submit's admission, admitted-add.ts `formatTwo`) as the
 * run's format-2 data of that tenant, without `cjson.decode` (test/bench/README.md round 51
 * `submit-lua`): the same answer and the same keys written as the decode of that text, and any
 * other text decoded as before. Real redis-server, the real script text.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { onRedisServer } from '../test/test-redis.ts';
import { type FetchedStartTerms, fetchedStartArgs } from './fetched-start-args.ts';
import { fetchLeaseBeginScript } from './lease-scripts.ts';

let redis: Redis;
onRedisServer((client) => {
  redis = client;
});

// A fetch that took the job: its hash's fields as the add's HMSET writes them (name, data, …), its
// id. ARGV: the data, the id, the vouched text, then the start's arguments.
const BODY = `return {{'name', 'run', 'data', ARGV[1], 'opts', '{}'}, ARGV[2], 0, 0}`;
const PLAIN = fetchLeaseBeginScript(BODY, 'nil');
const VOUCHED = fetchLeaseBeginScript(BODY, 'nil', false, 'nil', 'nil', 'A[3]', "'acme'");
const startTerms: FetchedStartTerms = {
  mode: 'read-only',
  share: 0.5,
  cap: 0,
  leaseMs: 30_000,
  journalKey: (runId) => `test:${runId}:journal`,
  runKey: (runId) => `test:${runId}:run`,
  start: (runId) => ({
    streamKey: `test:${runId}:events`,
    maxLen: 100,
    type: 'started',
    sealedData: '{}',
    channel: 'test:wake',
    message: `${runId}:started`,
  }),
  ttlSeconds: 60,
  nowMs: 1765129953123,
};

/** The script's answer and every key's type and contents after it (a stream by its entries' fields). */
async function after(script: typeof PLAIN, data: string, vouched: string) {
  await redis.flushall();
  await redis.hset('test:r1:run', 'status', 'Queued', 'attempts', '0', 'updatedAt', '1');
  const answer = await script.run(
    redis,
    ['test:unused'],
    [data, 'r1', vouched, ...fetchedStartArgs(startTerms)],
  );
  const out: Record<string, unknown> = {};
  for (const k of (await redis.keys('*')).sort()) {
    const type = await redis.type(k);
    if (type === 'hash') out[k] = await redis.hgetall(k);
    else if (type === 'zset') out[k] = (await redis.zrange(k, 0, -1)).length;
    else if (type === 'stream') out[k] = (await redis.xrange(k, '-', '+')).map(([, fields]) => fields);
    else out[k] = type;
  }
  return { answer, out };
}

describe("the fused fetch's start and a vouched job data text", () => {
  const FORMAT_TWO = '{"tenant":"acme","enqueuedAtMs":1765129953123.5}';

  it('starts the run as the decode of the same text does', async () => {
    const vouched = await after(VOUCHED, FORMAT_TWO, FORMAT_TWO);
    const plain = await after(PLAIN, FORMAT_TWO, FORMAT_TWO);
    expect(vouched).toEqual(plain);
    // Started: the lease taken, the record Running.
    expect((vouched.answer as unknown[])[4]).toBeTruthy();
    expect((vouched.out['test:r1:run'] as Record<string, string>).status).toBe('Running');
  });

  it('does not decode the vouched text: one cjson cannot read still starts the run as its tenant', async () => {
    const vouched = await after(VOUCHED, 'not json', 'not json');
    const plain = await after(PLAIN, FORMAT_TWO, FORMAT_TWO);
    // The same keys written and the same start (the answer's fifth element); its fields hold the text.
    expect(vouched.out).toEqual(plain.out);
    expect((vouched.answer as unknown[])[4]).toEqual((plain.answer as unknown[])[4]);
    expect((vouched.answer as unknown[])[4]).toBeTruthy();
  });

  it.each([
    ['another tenant', '{"tenant":"beta","enqueuedAtMs":1}'],
    ['a runId of its own', '{"runId":"r9","tenant":"acme","enqueuedAtMs":1}'],
    ['a skill', '{"tenant":"acme","skill":"s","enqueuedAtMs":1}'],
    ['no JSON', 'not json'],
  ])('decodes any other text as before: %s', async (_, data) => {
    const vouched = await after(VOUCHED, data, FORMAT_TWO);
    const plain = await after(PLAIN, data, FORMAT_TWO);
    expect(vouched).toEqual(plain);
  });
});
