import { describe, expect, it } from 'vitest';
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
