/**
 * A runner's slot frees only once the fair-share lease it held is given back in Redis: a slot
 * freed first lets this worker's next fetch take its lease (on the worker's connection, which Redis
 * may serve before the release's) while the pool still counts the old one, a full pool under
 * contention (a deferral for nothing; alone, the seed of the chain test/bench/README.md round 19
 * hunted). Fault injection on the paths that give a lease back apart from a run's end script: an
 * attempt that throws past the executor, and a start no processor took. Real redis-server, BullMQ
 * and runner; the order read from the calls themselves (release asked, release landed, slot back).
 */

import { keys } from '@islet/core';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';
import { createFairShare } from './fair-share.ts';
import type { SlotGate } from './slot-gate.ts';

const h = onRunnerHarness('lease-order-test');

/** A fair share that notes when a release of `jobId` is asked for and when it has landed. */
function noting(log: string[], jobId: string) {
  return (d: Parameters<typeof createFairShare>[0]) => {
    const real = createFairShare(d);
    return {
      ...real,
      release: async (...args: Parameters<typeof real.release>) => {
        if (args[2] !== jobId) return real.release(...args);
        log.push('release asked');
        await real.release(...args);
        log.push('release landed');
      },
    };
  };
}

describe('a slot frees after its lease is given back', () => {
  it('an attempt that throws past the executor', async () => {
    const log: string[] = [];
    const t = await h.setUp('throws', true, undefined, {
      slots: 1,
      createShare: noting(log, 'x'),
      onWork: (runId) => {
        if (runId === 'x') throw new Error('injected: the attempt throws past the executor');
      },
    });
    try {
      await h.warmUp(t, 'warm-x');
      const gate = t.worker().gate as SlotGate;
      const release = gate.release.bind(gate);
      gate.release = () => {
        if (log.includes('release asked')) log.push('slot back');
        release();
      };
      await h.newRun('x');
      await t.add('x');
      await until('x to fail', async () => (await t.queue.getJobState('x')) === 'failed');
      await until('its slot to come back', async () => log.includes('slot back'));
      expect(log.slice(0, 3)).toEqual(['release asked', 'release landed', 'slot back']);
      const redis = await t.queue.client;
      expect(await redis.zscore(keys.poolBusy(mode), 'x')).toBeNull();
    } finally {
      await t.close();
    }
  });

  it('a start no processor took', async () => {
    const log: string[] = [];
    const t = await h.setUp('untaken', true, undefined, { slots: 1, createShare: noting(log, 'u') });
    try {
      await h.warmUp(t, 'warm-u');
      const worker = t.worker();
      const gate = worker.gate as SlotGate;
      // The slot u's fetch reserved (its token) coming back, and no other fetch's.
      let token: string | undefined;
      const fetched = gate.fetched.bind(gate);
      gate.fetched = (tk, got) => {
        if (!got && tk === token) log.push('slot back');
        fetched(tk, got);
      };
      // The processor fails before it takes the start its fetch made (lease granted, attempt begun).
      const take = worker.takeFetchedStart.bind(worker);
      worker.takeFetchedStart = (jobId) => {
        if (jobId === 'u') throw new Error('injected: the processor fails before its start');
        return take(jobId);
      };
      const processJob = worker.processJob.bind(worker);
      worker.processJob = (...args: Parameters<typeof processJob>) => {
        if (args[0].id === 'u') token = args[1];
        return processJob(...args);
      };
      await h.newRun('u');
      await t.add('u');
      await until('u to fail', async () => (await t.queue.getJobState('u')) === 'failed');
      await until('its slot to come back', async () => log.includes('slot back'));
      expect(log.slice(0, 3)).toEqual(['release asked', 'release landed', 'slot back']);
      const redis = await t.queue.client;
      expect(await redis.zscore(keys.poolBusy(mode), 'u')).toBeNull();
    } finally {
      await t.close();
    }
  });
});
