/**
 * A run's result and text sealed together (`endSeal: 'together'`, ISLET_END_SEAL): one field
 * (`output`), one seal by the writer and one open by each reader of the end, the pushed end
 * included; the same run read back as when they are sealed apart (the default, the shape every
 * earlier release writes and reads), which this release still reads. On a real Redis.
 */
import { channels, generateSealKey, keys, type Sealer, sealerFromConfig } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import type { RunResult } from '@islet/protocol';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createRunStore } from './run-store.ts';
import type { EndSeal } from './run-store-types.ts';

/** One key for every store (one deployment's); a sealer that tells which sealed values were opened, and how many seals it made. */
const inner = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
function counting(): { sealer: Sealer; seals: () => number; opened: string[] } {
  let seals = 0;
  const opened: string[] = [];
  return {
    sealer: {
      seal: (plain) => {
        seals++;
        return inner.seal(plain);
      },
      open: (sealed) => {
        opened.push(sealed);
        return inner.open(sealed);
      },
    },
    seals: () => seals,
    opened,
  };
}

const small: RunResult = {
  _tag: 'Completed',
  value: { n: 1, s: 'a\nb' },
  logs: [{ level: 'log', text: 'hi' }],
};
const smallText = 'hi\n{"n":1,"s":"a\\nb"}';
// Printed lines past stored-text.ts's 1 KB: the text is stored as a reference to them.
const lines = Array.from({ length: 40 }, (_, i) => ({
  level: 'log' as const,
  text: `line ${i} ${'x'.repeat(40)}`,
}));
const large: RunResult = { _tag: 'Completed', value: 'done', logs: lines };
const largeText = `${lines.map((l) => l.text).join('\n')}\ndone`;

/** Ends run `id` through a store of `endSeal`; its stored record, its pushed record, the seals the end made. */
async function end(redis: Redis, endSeal: EndSeal | undefined, id: string, result: RunResult, text: string) {
  const c = counting();
  const runs = createRunStore(redis, c.sealer, endSeal ? { endSeal } : {});
  const run = runFixture(id, { tenant: 't1', pushEnd: true });
  await runs.create(run);
  const sub = redis.duplicate();
  const messages: string[] = [];
  sub.on('message', (_c: string, m: string) => messages.push(m));
  await sub.subscribe(channels.runEvents);
  try {
    // The final status's event is sealed once per store: sealed here, before the count.
    await runs.create(runFixture(`${id}-w`, { tenant: 't1' }));
    await runs.finish(runFixture(`${id}-w`, { tenant: 't1' }), { status: 'Completed', result, text });
    const before = c.seals();
    expect(await runs.finish(run, { status: 'Completed', result, text })).toBe(true);
    const seals = c.seals() - before;
    for (let i = 0; i < 100 && !messages.some((m) => m.startsWith(`${id} end `)); i++)
      await new Promise((r) => setTimeout(r, 10));
    const pushed = messages.find((m) => m.startsWith(`${id} end `));
    if (!pushed) throw new Error('no end pushed');
    const [flat] = JSON.parse(pushed.slice(`${id} end `.length)) as [string[]];
    return { runs, c, seals, stored: await redis.hgetall(keys.run(id)), pushed: fieldsOf(flat) };
  } finally {
    sub.disconnect();
  }
}

/** The record's fields whose sealed values were opened (in the order opened). */
const openedFields = (record: Record<string, string>, opened: string[]) =>
  opened.map((v) => Object.keys(record).find((k) => record[k] === v) ?? '?');

describe('an end sealed together', () => {
  it('is one field, one seal and one open, the pushed end included; read back as the same run', () =>
    withRedis(async (redis) => {
      for (const [id, result, text] of [
        ['s1', small, smallText],
        ['l1', large, largeText],
      ] as const) {
        const together = await end(redis, 'together', id, result, text);
        expect(Object.keys(together.stored)).toContain('output');
        for (const apart of ['result', 'text', 'textRef']) expect(together.stored).not.toHaveProperty(apart);
        expect(together.seals).toBe(1);
        expect(together.pushed).toEqual(together.stored);
        together.c.opened.length = 0;
        // The gateway's waiter reads the pushed end so (runs-service.ts `endOf`).
        const read = together.runs.fromHash(together.pushed, true);
        expect(read?.result).toEqual(result);
        expect(read?.text).toBe(text);
        expect(
          openedFields(together.pushed, together.c.opened).filter(
            (f) => f !== 'code' && f !== 'request' && f !== 'description',
          ),
        ).toEqual(['output']);

        // Sealed apart (the default): what every earlier release writes; this release reads it as before.
        const apart = await end(redis, undefined, `${id}a`, result, text);
        expect(apart.stored).not.toHaveProperty('output');
        expect(apart.stored).toHaveProperty('result');
        expect(apart.stored).toHaveProperty(result === large ? 'textRef' : 'text');
        expect(apart.seals).toBe(2);
        apart.c.opened.length = 0;
        const old = apart.runs.fromHash(apart.pushed, true);
        expect(old?.result).toEqual(result);
        expect(old?.text).toBe(text);
        expect(
          openedFields(apart.pushed, apart.c.opened).filter(
            (f) => f !== 'code' && f !== 'request' && f !== 'description',
          ),
        ).toEqual(['result', result === large ? 'textRef' : 'text']);
        // One store reads both shapes (a gateway beside runners of either setting).
        expect((await together.runs.get(`${id}a`))?.text).toBe(text);
        expect((await apart.runs.get(id))?.text).toBe(text);
      }
    }));
});
