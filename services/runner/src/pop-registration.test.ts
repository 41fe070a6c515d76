/**
 * A worker's registration for the hand-off while the queue's marker stands (round 48
 * `pop-registration`): its blocking pop, sent right behind the registration, is served the marker
 * at once, so a registration written then would stand with no pop blocked until the worker's
 * TAKE_BACK, and a submit in that round trip would hand its job to a worker already woken (it then
 * waits for the take-back). The registration is refused instead, and no take-back follows the pop.
 * Real redis-server; the registration, the pop and the take-back are the runner's own
 * (handoff-store.ts `registerAndPop`); the path is read from the script calls and the idle set.
 */
import { createRedis } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { handOffKeys } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, until } from '../test/runner-harness.ts';
import { registerAndPop } from './handoff-store.ts';

const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;
const marker = `${prefix}marker`;

const evals = async (r: Redis) =>
  Number(/cmdstat_eval:calls=(\d+)/.exec(await r.info('commandstats'))?.[1] ?? 0);

describe('a registration while the marker stands', () => {
  it('is refused: the pop is served the marker, no registration stood, and no take-back goes', async () => {
    const server = await startRedis();
    const r = createRedis(server.url);
    const blocking = r.duplicate();
    try {
      const own = handOffKeys(prefix, 'w1');
      const terms = {
        keys: [],
        prefix,
        token: 'w1:h:0',
        lockDuration: 1000,
        name: '',
        startArgs: [],
        handOff: own.handOff,
      };
      const pop = (registered: (yes: boolean) => void, tookBack: () => void) =>
        registerAndPop(
          blocking as unknown as Parameters<typeof registerAndPop>[0],
          [own.idle, own.idleArgs, own.handOff, own.closed],
          'w1',
          terms,
          60_000,
          marker,
          5,
          registered,
          tookBack,
          true,
        );
      // The base marker (a job waiting) and a delayed job's (its time as the score): each is
      // served to the pop at once.
      for (const [score, member] of [
        [0, '0'],
        [Date.now() + 3_600_000, '1'],
      ] as const) {
        await r.zadd(marker, score, member);
        await r.config('RESETSTAT');
        let registered: boolean | undefined;
        let takeBacks = 0;
        const popped = await pop(
          (yes) => {
            registered = yes;
          },
          () => takeBacks++,
        );
        expect(popped.marker).toEqual([marker, member, String(score)]);
        expect(popped.handed).toBeUndefined();
        // f63d2625: registered, the registration standing until the take-back sent after the pop.
        expect(registered).toBe(false);
        expect(takeBacks).toBe(0);
        expect(await evals(r)).toBe(1);
        expect(await r.exists(own.idle, own.idleArgs, own.handOff)).toBe(0);
      }

      // The marker gone: registered as ever, and the pop woken by a marker set after it is
      // followed by its take-back, which removes the registration.
      expect(await r.exists(marker)).toBe(0);
      let registered: boolean | undefined;
      let takeBacks = 0;
      const woken = pop(
        (yes) => {
          registered = yes;
        },
        () => takeBacks++,
      );
      await until('w1 registered', async () => (await r.zscore(own.idle, 'w1')) !== null);
      await r.zadd(marker, 0, '0');
      expect((await woken).marker?.[0]).toBe(marker);
      expect(registered).toBe(true);
      expect(takeBacks).toBe(1);
      expect(await r.exists(own.idle, own.idleArgs)).toBe(0);
    } finally {
      blocking.disconnect();
      r.disconnect();
      await server.stop();
    }
  });
});
