/**
 * A waiter's pushed end is opened past the run store's own-seal memo (create-deps.ts `endSealer`):
 * its runner sealed it, so the memo never holds it, and looking it up there (the memo's key built
 * from the sealed text and bind, then two Map lookups) was a miss in the turn between the push and
 * the response (test/bench/README.md, round 49 `end-hop`). The submit's own fields still open from
 * memory.
 */
import { createRedis, keys } from '@islet/core';
import { createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pushedEnd } from '../../runs/test/pushed-end.ts';
import { type GatewayDepsUnderTest, startGatewayDeps } from '../test/gateway-harness.ts';

let gateway: GatewayDepsUnderTest | undefined;

beforeAll(async () => {
  gateway = await startGatewayDeps();
});

afterAll(async () => {
  await gateway?.close();
});

describe("a run's end and the gateway's own-seal memo", () => {
  it('a pushed end and a read of the run open the end with no memo lookup; the submit’s fields from memory', async () => {
    const deps = gateway!.deps;
    const redis = createRedis(gateway!.server.url);
    try {
      const run = runFixture('past-memo', { tenant: 't1', pushEnd: true });
      await deps.runs.create(run);
      // The runner's store: the plain sealer, as a runner's.
      const runner = createRunStore(redis, deps.sealer);
      const [record] = await pushedEnd(redis, redis, run.id, () =>
        runner.finish(run, {
          status: 'Completed',
          result: { _tag: 'Completed', value: 1, logs: [] },
          text: '1',
          sentNoCall: true,
        }),
      );
      // The memo's lookups are Map reads keyed by the sealed text's last 24 characters
      // (own-seal-memo.ts): none for the end's.
      const ended = await redis.hget(keys.run(run.id), 'ended');
      expect(ended).toBeTruthy();
      const gets = vi.spyOn(Map.prototype, 'get');
      const opens = vi.spyOn(deps.sealer, 'open');
      const endLookups = () => gets.mock.calls.filter(([key]) => key === ended!.slice(-24)).length;
      try {
        const pushed = deps.runs.fromLeanEnd(record, run);
        expect(pushed?.text).toBe('1');
        expect(endLookups()).toBe(0);
        expect(opens.mock.calls.map(([, bind]) => bind)).toEqual([`ended\0${run.id}`]);
        const read = await deps.runs.get(run.id);
        expect(read?.code).toBe(run.code);
        expect(read?.description).toBe(run.description);
        expect(read?.text).toBe('1');
        expect(endLookups()).toBe(0);
        // Program, request and description from memory: the read's one decryption is the end's.
        expect(opens.mock.calls.map(([, bind]) => bind)).toEqual([`ended\0${run.id}`, `ended\0${run.id}`]);
      } finally {
        gets.mockRestore();
        opens.mockRestore();
      }
    } finally {
      redis.disconnect();
    }
  });
});
