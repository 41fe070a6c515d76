/**
 * What a pick-up does before its run's work (one server): the job came with its run's start (by
 * hand-off or by the fused fetch) and the queue is drained behind it, so BullMQ's next fetch can
 * only answer "no job" and the worker then registers idle again. Neither goes before the run's
 * work: the fetch waits a turn of the event loop. Read from the worker's counters at the moment
 * the run's work begins (where the real executor sends the program), never from time.
 */
import { describe, expect, it } from 'vitest';
import { onRunnerHarness, type RunnerUnderTest, until } from '../test/runner-harness.ts';

const h = onRunnerHarness('pickup-order-test');
const { newRun, setUp, warmUp } = h;

interface Counts {
  drainedByFetch: number;
  deferredFetches: number;
  idleRegistrations: number;
  handOffs: number;
  redisFetches: number;
}

const countsOf = (t: RunnerUnderTest): Counts => {
  const w = t.worker();
  return {
    drainedByFetch: w.drainedByFetch,
    deferredFetches: w.deferredFetches,
    idleRegistrations: w.idleRegistrations,
    handOffs: w.handOffs,
    redisFetches: w.redisFetches,
  };
};

/** Runs `id` through a runner warmed up and blocked idle; returns the counts before, at its work, after. */
async function pickUp(tag: string, handOff: boolean) {
  const atWork = new Map<string, Counts>();
  let t: RunnerUnderTest | undefined;
  t = await setUp(tag, true, undefined, {
    handOff,
    onWork: (runId) => {
      if (t) atWork.set(runId, countsOf(t));
    },
  });
  const runner = t;
  try {
    await warmUp(runner, `${tag}w`);
    await until('the worker blocked', async () => runner.worker().drainedByFetch > 0);
    if (handOff) await until('the worker registered', async () => runner.worker().idleRegistrations > 0);
    const before = countsOf(runner);
    await newRun(`${tag}1`);
    await runner.add(`${tag}1`);
    await until(`${tag}1 to complete`, async () => runner.outcomes.length === 2);
    await until(
      'the next fetch answered',
      async () => runner.worker().drainedByFetch > before.drainedByFetch,
    );
    return { before, work: atWork.get(`${tag}1`), after: countsOf(runner), outcomes: runner.outcomes };
  } finally {
    await runner.close();
  }
}

describe('the pick-up before its run (one server)', () => {
  it('a handed job: its run starts before the next fetch answers and before the worker registers again', async () => {
    const { before, work, after, outcomes } = await pickUp('po-handed', true);
    expect(outcomes).toEqual(['completed 1', 'completed 1']);
    expect(after.handOffs).toBe(before.handOffs + 1);
    expect(after.redisFetches).toBe(before.redisFetches);
    // At the run's work: the fetch behind it had not answered, the registration not been written.
    expect(work).toEqual({ ...before, handOffs: before.handOffs + 1 });
    // Then the fetch behind it waited its turn and answered from what the hand-off saw.
    expect(after.deferredFetches).toBe(before.deferredFetches + 1);
    expect(after.drainedByFetch).toBe(before.drainedByFetch + 1);
  });

  it('a job the fused fetch brought: its run starts before the next fetch answers', async () => {
    const { before, work, after, outcomes } = await pickUp('po-fused', false);
    expect(outcomes).toEqual(['completed 1', 'completed 1']);
    expect(after.redisFetches).toBe(before.redisFetches + 1);
    expect(work).toEqual({ ...before, redisFetches: before.redisFetches + 1 });
    expect(after.deferredFetches).toBe(before.deferredFetches + 1);
    expect(after.drainedByFetch).toBe(before.drainedByFetch + 1);
  });
});
