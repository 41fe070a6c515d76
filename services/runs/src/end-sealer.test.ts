// `endSealer` (run-store-types.ts): a run's end sealed and opened by a sealer of its own, not the
// store's — the gateway's store seals through its own-seal memo, which never holds an end its
// runner sealed, so each open of a waiter's pushed end paid the memo's miss (test/bench/README.md,
// round 49 `end-hop`). Real redis-server; both stored formats.
import { createRedis, generateSealKey, type Sealer, sealerFromConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { pushedEnd } from '../test/pushed-end.ts';
import { createRunStore } from './run-store.ts';

const inner = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** The sealer, keeping the bind (or `-`) of each seal and open. */
function logging() {
  const seals: string[] = [];
  const opens: string[] = [];
  const sealer: Sealer = {
    seal: (p, bind) => {
      seals.push(bind ?? '-');
      return inner.seal(p, bind);
    },
    open: (s, bind) => {
      opens.push(bind ?? '-');
      return inner.open(s, bind);
    },
  };
  return { sealer, seals, opens };
}

const request = {
  style: 'run_code' as const,
  connections: ['c1'],
  bindings: [],
  limits: { timeoutMs: 30_000, memoryMb: 512, outputBytes: 1024, outputCap: 'shared' as const },
};
const completed = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: { n: 1 }, logs: [{ level: 'log' as const, text: 'hi' }] },
  text: 'hi\n{"n":1}',
};

describe('endSealer', () => {
  it("seals a run's end and opens it, from its push and from a read, in both formats; the store's sealer does the rest", async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      for (const writeFormat of ['1', '2'] as const) {
        const store = logging();
        const end = logging();
        const runs = createRunStore(redis, store.sealer, { writeFormat, endSealer: end.sealer });
        const id = `e${writeFormat}`;
        const run = runFixture(id, { request, pushEnd: true });
        await runs.create(run);
        const [record] = await pushedEnd(redis, redis, id, () =>
          runs.finish(run, { ...completed, sentNoCall: true }),
        );
        // The end's own fields are the end sealer's (format 1: `result`, then `text`; 2: `ended`);
        // the store's sealer seals the rest (the submit's fields, the end's status event).
        expect(end.seals).toEqual(writeFormat === '2' ? [`ended\0${id}`] : ['-', '-']);
        expect(store.seals.some((b) => b.startsWith('ended'))).toBe(false);
        const pushedRead = runs.fromLeanEnd(record, run);
        expect(pushedRead?.result).toEqual(completed.result);
        expect(pushedRead?.text).toBe(completed.text);
        expect(store.opens).toEqual([]);
        const opensAtPush = end.opens.length;
        expect(opensAtPush).toBeGreaterThan(0);
        const read = await runs.get(id);
        expect(read?.result).toEqual(completed.result);
        expect(read?.text).toBe(completed.text);
        expect(read?.code).toBe(run.code);
        // A read opens the end by the end sealer again, and the submit's fields by the store's.
        expect(end.opens.length).toBe(2 * opensAtPush);
        expect(store.opens.length).toBeGreaterThan(0);
        expect(store.opens.some((b) => b.startsWith('ended'))).toBe(false);
      }
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("without one, the store's sealer seals and opens the end (the runner's store)", async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      const store = logging();
      const runs = createRunStore(redis, store.sealer, { writeFormat: '2' });
      const run = runFixture('d1', { request, pushEnd: true });
      await runs.create(run);
      const [record] = await pushedEnd(redis, redis, 'd1', () =>
        runs.finish(run, { ...completed, sentNoCall: true }),
      );
      expect(store.seals).toContain('ended\0d1');
      expect(runs.fromLeanEnd(record, run)?.text).toBe(completed.text);
      expect(store.opens).toEqual(['ended\0d1']);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
