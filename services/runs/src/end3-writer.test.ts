/**
 * The `end3` writer (test/bench/README.md round 43 `format-43`): format 2's end of a waited run
 * with calls pushes `<id> end3`, its journal's entries and sources spliced in as the JSON values
 * they are stored as, from END3_MIN_BYTES; `end2` below it, in format 1, for a run that sent no
 * call, and for a journal holding anything not known safe unescaped. Attacked with a tenant's
 * strings in every field of a call that reaches its entry or source (a binding's and a tool's
 * names, a connection's name and id: quotes, backslashes, control characters, U+2028, lone
 * surrogates): the message always parses, and its calls read as the stored journal's. Real Redis.
 * Fails on a0565cd2 (it pushes `end2` always: the first test's tag).
 */
import { channels, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { createRunStore } from './run-store.ts';
import { pushArg } from './run-store-args.ts';
import type { WriteFormat } from './run-store-types.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const end = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: 'ok',
};
/** What a tenant names: a binding, a tool, a connection. */
const hostile = 'q"u\\o\\"te\u0000\u0001\u001f\n\t\u2028\u2029\ud800\udfff\udc00</script>/';
const source = {
  connectionId: `conn-${hostile}`,
  connectionName: `CRM ${hostile}`,
  name: `find ${hostile}`,
  kind: 'tool' as const,
};

/** Every message pushed while `body` runs, on the run-events channel. */
async function pushed(redis: Redis, body: () => Promise<unknown>): Promise<string[]> {
  const sub = redis.duplicate();
  const messages: string[] = [];
  sub.on('message', (_c: string, m: string) => messages.push(m));
  await sub.subscribe(channels.runEvents);
  try {
    await body();
    for (let i = 0; i < 100 && !messages.some((m) => / end[23] /.test(m)); i++)
      await new Promise((done) => setTimeout(done, 10));
    return messages.filter((m) => / end[23] /.test(m));
  } finally {
    sub.disconnect();
  }
}

/** A waited run of `calls` calls (each sent and answered), ended in `format`: its pushed end. */
async function endWith(
  redis: Redis,
  id: string,
  format: WriteFormat,
  calls: number,
  options: { small?: boolean; before?: () => Promise<unknown>; sentNoCall?: boolean } = {},
) {
  const runs = createRunStore(redis, sealer, { writeFormat: format });
  const journal = createCallJournal({ redis, sealer, writeFormat: format });
  const run = runFixture(id, { tenant: 't1', pushEnd: true });
  await runs.create(run);
  await journal.beginAttempt(id, keys.run(id));
  const small = { connectionId: 'c', connectionName: 'C', name: 'n', kind: 'tool' as const };
  const from = options.small ? small : source;
  for (let index = 0; index < calls; index++) {
    const binding = options.small ? 'c.n' : `crm.${hostile}`;
    await journal.claim(id, 1, { index, binding, argsJson: '{"a":1}', source: from, sendNow: true });
    const valueJson = options.small ? '1' : JSON.stringify({ v: hostile, index });
    await journal.complete(id, index, { type: 'result', valueJson });
  }
  await options.before?.();
  const [message, ...more] = await pushed(redis, () =>
    runs.finish(run, { ...end, ...(options.sentNoCall ? { sentNoCall: true } : {}) }),
  );
  expect(more).toEqual([]);
  const tag = (message as string).split(' ')[1];
  const [, flat] = JSON.parse((message as string).slice(id.length + 6)) as [unknown, unknown[]];
  if (options.before) return { tag, flat, views: [] };
  const stored = await redis.hgetall(`islet:journal:{${id}}`);
  // Read as the gateway reads it (`callsOfPushed`): the same calls as the stored journal's.
  const views = journal.callsOfPushed(flat);
  expect(views).toEqual(journal.callsOf(stored));
  expect(views.length).toBe(calls);
  return { tag, flat, views };
}

describe('the end3 writer', () => {
  it("format 2: a waited run's calls pushed as end3, a tenant's strings in them read back whole", () =>
    withRedis(async (redis) => {
      const { tag, flat, views } = await endWith(redis, 'e1', '2', 3);
      expect(tag).toBe('end3');
      // Entries and the source are objects in the message, the counters strings, no claim part.
      const names = flat.filter((_, i) => i % 2 === 0) as string[];
      expect(names.filter((n) => n.startsWith('#c'))).toEqual([]);
      for (let i = 0; i < flat.length; i += 2) {
        const name = flat[i] as string;
        expect(typeof flat[i + 1], name).toBe(name === '#attempt' || name === '#seq' ? 'string' : 'object');
      }
      // The binding as ioredis sent it (a lone surrogate is U+FFFD in UTF-8); the source as it
      // was, lone surrogates included (its JSON, made by JSON.stringify, escapes them).
      expect(views[0]?.binding).toBe(`crm.${Buffer.from(hostile).toString()}`);
      expect(views[0]?.source).toEqual(source);
    }));

  it('format 1, a run that sent no call, and a journal over the cut-off: end2', () =>
    withRedis(async (redis) => {
      expect((await endWith(redis, 'f1', '1', 3)).tag).toBe('end2');
      expect((await endWith(redis, 'n1', '2', 0, { sentNoCall: true })).tag).toBe('end2');
      // One small call: under END3_MIN_BYTES (there end3's build costs Redis more than it saves).
      expect((await endWith(redis, 's1', '2', 1, { small: true })).tag).toBe('end2');
      // Many: end3 up to the push's cap.
      expect((await endWith(redis, 'm1', '2', 60)).tag).toBe('end3');
      expect(pushArg(true, false, '1')).toBe('1');
      expect(pushArg(true, true, '1')).toBe('2');
      expect(pushArg(true, false, '2')).toBe('3');
      expect(pushArg(true, true, '2')).toBe('4');
      expect(pushArg(false, false, '2')).toBe('0');
      expect(pushArg(false, true, '2')).toBe('5');
      expect(pushArg(false, true, '1')).toBe('5');
    }));

  it('a name, counter or value not known safe unescaped: end2, every value escaped by cjson', () =>
    withRedis(async (redis) => {
      const odd: [string, string, string][] = [
        ['o1', 'x"],"', '{}'],
        ['o2', '#seq', '1"]'],
        ['o3', '#s:a"b', '{}'],
        ['o4', '7', '"}{"'],
        ['o5', '1e3', '{}'],
        ['o6', '#other', '1'],
      ];
      for (const [id, name, value] of odd) {
        const out = await endWith(redis, id, '2', 3, {
          before: () => redis.hset(`islet:journal:{${id}}`, name, value),
        });
        expect(out.tag, name).toBe('end2');
        expect(fieldsOf(out.flat as string[])[name]).toBe(value);
      }
    }));
});
