import { channels } from '@islet/core';
import type { Redis } from 'ioredis';

/**
 * The `[record, journal]` of `id`'s lean pushed end (`<id> end2 …`, includes/transition.lua),
 * published while `finish` runs: a subscriber of its own (a duplicate of `subscriber`) listens from
 * before `finish` starts, and is closed whatever happens. Throws when no end of `id` was pushed.
 */
export async function pushedEnd(
  redis: Redis,
  subscriber: Redis,
  id: string,
  finish: () => Promise<unknown>,
): Promise<[string[], string[]]> {
  const sub = subscriber.duplicate();
  const messages: string[] = [];
  const prefix = `${id} end2 `;
  sub.on('message', (_c: string, m: string) => messages.push(m));
  await sub.subscribe(channels.runEvents);
  try {
    await finish();
    for (let i = 0; i < 100 && !messages.some((m) => m.startsWith(prefix)); i++)
      await new Promise((done) => setTimeout(done, 10));
    const pushed = messages.find((m) => m.startsWith(prefix));
    if (!pushed) throw new Error(`no end pushed (${redis.status})`);
    return JSON.parse(pushed.slice(prefix.length)) as [string[], string[]];
  } finally {
    sub.disconnect();
  }
}
