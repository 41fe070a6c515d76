/**
 * What the executor tells a run's end about its decisions (round 48 `decisions-end`): `noDecisions`
 * only for the run's first plain attempt that sent no call and asked no wider access, so that end
 * sends no EXPIRE for a decisions hash that cannot exist; a run that sent a call (a call's
 * decision is asked on it), asked wider access (asked before its first attempt) or is on a later
 * attempt (a decision round's job, a resume, a stalled job's take-over) is not told, and its end
 * expires the hash. Read from what the end was told and from Redis's MONITOR (the EXPIREs the end's
 * script sent). A fake engine, the real run store and journal on a real redis-server. Fails on
 * f63d2625 (no `noDecisions`).
 */
import { journalKeys } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaDuring } from '../../runs/test/lua-during.ts';
import { onRedisServer } from '../../runs/test/test-redis.ts';
import { endsTold, journalingExecutor, limits, signal } from '../test/executor-fakes.ts';

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

/** The keys of the EXPIREs Redis ran from scripts while `body` ran (MONITOR, up to an end marker). */
async function expiredKeys(body: () => Promise<unknown>): Promise<string[]> {
  const ran = await luaDuring(redis, body);
  return ran.filter((a) => a[0]?.toLowerCase() === 'expire').map((a) => a[1] as string);
}

describe('what the executor tells the end about decisions', () => {
  it('noDecisions for a first plain attempt with no call and no wider access; else not, and the end expires the hash', async () => {
    // Completed with 1; its program calls its binding once when its code is `'call'`.
    const { store, executor } = journalingExecutor('end-no-decisions', redis);
    const { runs } = store;
    const told = endsTold(store, (end) => end.noDecisions);
    const cases = [
      { id: 'plain', code: 'none', expected: true },
      { id: 'called', code: 'call', expected: false },
      { id: 'wider', code: 'none', wider: true, expected: false },
      // A later attempt (a decision round's job, a resume): the record counts one attempt before it.
      { id: 'again', code: 'none', attemptsBefore: 1, expected: false },
    ];
    for (const c of cases) {
      const request = {
        connections: [] as string[],
        bindings: [{ binding: 'notes.read' }] as never[],
        limits,
        ...(c.wider ? { sandboxPermissions: 'workspace-write' as const } : {}),
      };
      await runs.create(runFixture(c.id, { code: c.code, request }));
      if (c.attemptsBefore) await redis.hset(`islet:run:{${c.id}}`, 'attempts', String(c.attemptsBefore));
      const expired = await expiredKeys(async () => {
        const result = await executor.execute({
          runId: c.id,
          mode: 'read-only',
          enqueuedAtMs: Date.now(),
          cancel: signal,
          handBack: signal,
        });
        expect(result, c.id).toBe('completed');
      });
      expect(told.get(c.id), c.id).toBe(c.expected);
      expect(expired, c.id).toContain(`islet:run:{${c.id}}`);
      expect(expired.includes(journalKeys().decisions(c.id)), c.id).toBe(!c.expected);
    }
  });
});
