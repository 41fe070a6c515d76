import { channels } from '@islet/core';
import type { Redis } from 'ioredis';

/**
 * The `[record, journal]` of `id`'s lean pushed end (`<id> end2 …` or `<id> end3 …`,
 * includes/transition.lua), published while `finish` runs: a subscriber of its own (a duplicate of
 * `subscriber`) listens from before `finish` starts, and is closed whatever happens. Throws when no
 * end of `id` was pushed. An `end3` journal's values (entries and sources as JSON values) come back
 * as JSON text, as `end2` has them; `tags` (given) gets the tag of each end pushed.
 */
export async function pushedEnd(
  redis: Redis,
  subscriber: Redis,
  id: string,
  finish: () => Promise<unknown>,
  tags?: string[],
): Promise<[string[], string[]]> {
  const sub = subscriber.duplicate();
  const messages: string[] = [];
  const ours = (m: string) => m.startsWith(`${id} end2 `) || m.startsWith(`${id} end3 `);
  sub.on('message', (_c: string, m: string) => messages.push(m));
  await sub.subscribe(channels.runEvents);
  try {
    await finish();
    for (let i = 0; i < 100 && !messages.some(ours); i++) await new Promise((done) => setTimeout(done, 10));
    const pushed = messages.filter(ours);
    if (pushed.length === 0) throw new Error(`no end pushed (${redis.status})`);
    for (const m of pushed) tags?.push(m.slice(id.length + 1, id.length + 5));
    const [record, journal] = JSON.parse((pushed[0] as string).slice(id.length + 6)) as [string[], unknown];
    return [
      record,
      Array.isArray(journal)
        ? journal.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
        : (journal as string[]),
    ];
  } finally {
    sub.disconnect();
  }
}
