import { describe, expect, it } from 'vitest';
import { fetchedStartArgs } from './fetched-start-args.ts';
import { cancelledEnd, failedEnd, giveUpEnd } from './run-lifecycle.ts';

describe('failure records', () => {
  it('a cancel or an expiry: reason Cancelled, kind abort, the result text naming the kind', () => {
    expect(cancelledEnd('Cancelled', 'the run was cancelled while it waited')).toEqual({
      status: 'Cancelled',
      result: {
        _tag: 'Failed',
        reason: 'Cancelled',
        kind: 'abort',
        message: 'the run was cancelled while it waited',
        logs: [],
      },
      text: 'code run failed (abort): the run was cancelled while it waited',
      kind: 'abort',
    });
  });

  it('a run refused before it ran names only its reason in the result', () => {
    const end = failedEnd({
      status: 'Failed',
      reason: 'Unavailable',
      kind: 'sandbox-unavailable',
      message: 'Code Mode is off in the platform settings',
      kindInResult: false,
    });
    expect(end.result).toEqual({
      _tag: 'Failed',
      reason: 'Unavailable',
      message: 'Code Mode is off in the platform settings',
      logs: [],
    });
    expect(end.text).toBe('code run failed (sandbox-unavailable): Code Mode is off in the platform settings');
    expect(end.kind).toBe('sandbox-unavailable');
  });

  it('a runner giving up: Failed, Unavailable, worker-exit, the message saying why', () => {
    expect(giveUpEnd('the job failed')).toEqual(
      failedEnd({
        status: 'Failed',
        reason: 'Unavailable',
        kind: 'worker-exit',
        message: 'Islet could not finish the run: the job failed',
      }),
    );
    expect(giveUpEnd('the job failed').text).toBe(
      'code run failed (worker-exit): Islet could not finish the run: the job failed',
    );
  });
});

describe("a fetch's start arguments", () => {
  it('are made once per start maker and terms: each call copies them with its own time (b95bfd1: the start event made three times a call)', () => {
    let made = 0;
    const start = (runId: string) => {
      made += 1;
      return {
        streamKey: `islet:run:{${runId}}:events`,
        maxLen: 1000,
        type: 'status',
        sealedData: 'sealed',
        channel: 'islet:run-progress',
        message: `${runId} running`,
      };
    };
    const journalKey = (id: string) => `islet:journal:{${id}}`;
    const runKey = (id: string) => `islet:run:{${id}}`;
    const terms = {
      mode: 'code',
      share: 0.5,
      cap: 0,
      leaseMs: 30_000,
      journalKey,
      runKey,
      start,
      ttlSeconds: 600,
    };
    const first = fetchedStartArgs({ ...terms, nowMs: 1 });
    const second = fetchedStartArgs({ ...terms, nowMs: 2 });
    expect(made).toBe(3);
    expect(first.at(-1)).toBe(1);
    expect(second.at(-1)).toBe(2);
    expect(second.slice(0, -1)).toEqual(first.slice(0, -1));
    // A caller's change of the copy it got changes no later one (the hand-off replaces the time).
    second[second.length - 1] = 99;
    first[0] = 'changed';
    expect(fetchedStartArgs({ ...terms, nowMs: 3 }).slice(0, 2)).toEqual([second[0], second[1]]);
    expect(made).toBe(3);
    // Other terms, or another key maker: made again, with what they give.
    expect(fetchedStartArgs({ ...terms, leaseMs: 10_000, nowMs: 4 })).toContain(10_000);
    expect(made).toBe(6);
    const other = fetchedStartArgs({ ...terms, runKey: (id: string) => `other:{${id}}`, nowMs: 5 });
    expect(other).toContain('other:{');
    expect(made).toBe(9);
  });
});
