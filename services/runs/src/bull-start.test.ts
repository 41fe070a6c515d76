/**
 * bull-start.ts: the job start of a fetch (`bullStartJob`, the case every fetch of BullMQ 5 brings,
 * made without tables) against its general form (its first branch, `general` true: the path before round 35's
 * `end-lua`), each on its own copy of the same job hash, on real Redis: the commands Redis runs
 * (MONITOR, every argument but the key), the answer (the job's fields, in order) and the hash left
 * are the same, for a fresh job, a started one, `ats` not a number, a named worker or not, a job
 * its own script noted (`bullQ.known`) and shapes the lean form hands to the general one.
 */
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaDuring } from '../test/lua-during.ts';
import { onRedisServer } from '../test/test-redis.ts';
import { BULL_QUIET_PRELUDE } from './bull-quiet.ts';
import { compactLua } from './lua-scripts.ts';

// ARGV: processedOn, extra (JSON list), 'lean' | 'any', 'num' (processedOn as a number) | '',
// 'known' (the job noted as its own script's add notes it) | ''.
const start = new LuaScript(
  compactLua(`${BULL_QUIET_PRELUDE}
local processedOn = ARGV[1]
if ARGV[4] == 'num' then processedOn = tonumber(processedOn) end
local extra = cjson.decode(ARGV[2])
if ARGV[5] == 'known' then bullQ.known = {KEYS[1], redis.call('HGETALL', KEYS[1])} end
if ARGV[3] == 'lean' then return bullStartJob(KEYS[1], processedOn, extra) end
return bullStartJob(KEYS[1], processedOn, extra, true)`),
);

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

/** The commands Lua sent while `fn` ran: name and arguments after the key. */
async function inner(fn: () => Promise<unknown>): Promise<string[][]> {
  return (await luaDuring(redis, fn)).map((args) => [String(args[0]).toLowerCase(), ...args.slice(2)]);
}

const fresh = {
  name: 'run',
  data: '{"a":1}',
  opts: '{"attempts":3}',
  timestamp: '1765000000000',
  delay: '0',
  priority: '0',
};

describe("a fetch's job start without tables", () => {
  const cases: [string, Record<string, string>, string[], string, ('num' | '')?, ('known' | '')?][] = [
    ['fresh, unnamed worker', fresh, [], '1765000000123'],
    ['fresh, named worker', fresh, ['pb', 'w1'], '1765000000123'],
    [
      'started before (a retry)',
      { ...fresh, processedOn: '1', pb: 'old', ats: '3', atm: '2' },
      ['pb', 'w1'],
      '9',
    ],
    ['started before, unnamed now', { ...fresh, ats: '41', processedOn: '1', pb: 'old' }, [], '9'],
    ['ats first in the hash', { ats: '7', ...fresh }, ['pb', 'w'], '5'],
    ['ats not a number', { ...fresh, ats: 'x' }, ['pb', 'w'], '5'],
    ['ats not a whole number', { ...fresh, ats: '1.5' }, [], '5'],
    ['ats NaN', { ...fresh, ats: 'nan' }, [], '5'],
    ['ats past 2^52', { ...fresh, ats: '9007199254740993' }, [], '5'],
    ['ats negative', { ...fresh, ats: '-3' }, [], '5'],
    ['other extra fields (the general form)', fresh, ['pb', 'w', 'x', 'y'], '5'],
    ['extra not pb (the general form)', fresh, ['zz', 'w'], '5'],
    ['processedOn a number (the general form)', fresh, ['pb', 'w'], '1765000000123', 'num'],
    ['a job its own script noted', fresh, ['pb', 'w'], '1765000000123', '', 'known'],
    ['a started job its own script noted', { ...fresh, ats: '2' }, [], '1765000000123', '', 'known'],
    ['a job not there', {}, ['pb', 'w'], '5'],
  ];
  for (const [label, hash, extra, processedOn, num = '', known = ''] of cases) {
    it(`${label}: the same commands, answer and hash as the general form`, async () => {
      await redis.del('lean', 'any');
      if (Object.keys(hash).length > 0) {
        await redis.hset('lean', hash);
        await redis.hset('any', hash);
      }
      // An `ats` Redis cannot increment fails BullMQ's HINCRBY, in both forms alike.
      const run = (key: string, form: string) =>
        start
          .run(redis, [key], [processedOn, JSON.stringify(extra), form, num, known])
          .catch((err: Error) => ({ error: err.message.replace(/script: .*/, '') }));
      let leanAnswer: unknown;
      let anyAnswer: unknown;
      const leanCommands = await inner(async () => {
        leanAnswer = await run('lean', 'lean');
      });
      const anyCommands = await inner(async () => {
        anyAnswer = await run('any', 'any');
      });
      expect(leanCommands).toEqual(anyCommands);
      expect(leanAnswer).toEqual(anyAnswer);
      expect(await redis.hgetall('lean')).toEqual(await redis.hgetall('any'));
      // The answer is the hash as stored, field for field (HGETALL's order is the hash's own).
      if (Array.isArray(leanAnswer))
        expect(Object.fromEntries(chunk(leanAnswer as string[]))).toEqual(await redis.hgetall('lean'));
    });
  }
});

function chunk(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}
