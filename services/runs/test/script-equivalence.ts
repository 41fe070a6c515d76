/**
 * What a direct path is held to (handed-complete.test.ts, handed-refetch.test.ts): from the same
 * keys, a script with the direct path and BullMQ's text alone leave the same commands inside
 * Redis (MONITOR, every argument, in order), the same answer and the same keys after (DUMP, and
 * whether each expires); and the direct path takes exactly the cases it should.
 */
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { luaDuring } from './lua-during.ts';

export interface ScriptRun {
  answer: unknown;
  inner: string[][];
  after: Record<string, string>;
}

/** Every key: its DUMP and whether it expires. */
async function keysAfter(redis: Redis): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k of (await redis.keys('*')).sort())
    out[k] =
      `${(await redis.dumpBuffer(k))?.toString('hex')} ${(await redis.pttl(k)) > 0 ? 'expires' : 'kept'}`;
  return out;
}

/**
 * `source` run on `keys` and `args` in a Redis flushed and then filled by `prepare`; an error is
 * its message as the answer, without the script's name and line (the two sources differ there).
 */
export async function runScript(
  redis: Redis,
  source: string,
  keys: string[],
  args: (string | Buffer)[],
  prepare: (r: Redis) => Promise<unknown>,
): Promise<ScriptRun> {
  await redis.flushall();
  await prepare(redis);
  let answer: unknown;
  const inner = await luaDuring(redis, async () => {
    answer = await redis
      .eval(source, keys.length, ...keys, ...args)
      .catch(
        (e: Error) =>
          `error ${e.message.replace(/ script: .*$/, '').replace(/user_script:\d+/, 'user_script')}`,
      );
  });
  return { answer, inner, after: await keysAfter(redis) };
}

export interface EquivalenceCase {
  name: string;
  /** Whether the direct path takes it (else it leaves it to the text). */
  taken: boolean;
  /** Whether the script answers with an error (both ways). */
  fails?: boolean;
}

/**
 * One test a case: `withDirect` and `textOnly` leave the same; `takes` (answering 'taken' or
 * 'text') shows whether the direct path took it — a case it takes and fails fails in it.
 */
export function itMatchesTheText<C extends EquivalenceCase>(
  cases: readonly C[],
  run: (c: C, source: string) => Promise<ScriptRun>,
  sources: { withDirect: string; textOnly: string; takes: string },
): void {
  for (const c of cases) {
    it(`${c.taken ? 'takes' : 'leaves to the text'}: ${c.name}; Redis sees the same`, async () => {
      const got = await run(c, sources.withDirect);
      const want = await run(c, sources.textOnly);
      expect(got.inner, 'the commands').toEqual(want.inner);
      expect(got.answer, 'the answer').toEqual(want.answer);
      expect(got.after, 'the keys after').toEqual(want.after);
      expect(String(got.answer).startsWith('error')).toBe(c.fails === true);
      const took = String((await run(c, sources.takes)).answer);
      expect(c.taken && c.fails ? took.startsWith('error') : took).toBe(
        c.taken && c.fails ? true : c.taken ? 'taken' : 'text',
      );
    });
  }
}
