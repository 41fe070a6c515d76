/**
 * The parking timer of one execution (call-parking.ts): one timer for the execution, restarted at
 * each stretch with calls out, not one made and cleared per call (both were on a call's path,
 * README round 30, call-lone); a call that outwaits `parkAfterMs` still parks the run.
 */
import { createHook } from 'node:async_hooks';
import type { BindingCall } from '@islet/protocol';
import type { LiveOutcome } from '@islet/runs';
import { describe, expect, it } from 'vitest';
import { CallParking } from './call-parking.ts';

const call = (index: number): BindingCall => ({ index, binding: 'a.b', argsJson: '{}' });
const answer = (index: number): LiveOutcome => ({ outcome: { type: 'result', valueJson: String(index) } });

function slot() {
  const seen: string[] = [];
  return {
    seen,
    park: (_release: () => void) => {
      seen.push('park');
      return true;
    },
    resume: async () => {
      seen.push('resume');
    },
  };
}

describe('call parking', () => {
  it('calls one after another make one timer for the execution, none each', async () => {
    const s = slot();
    const parking = new CallParking(s, 50);
    const live = parking.wrap(async (c) => answer(c.index));
    let timeouts = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'Timeout') timeouts++;
      },
    });
    hook.enable();
    try {
      for (let i = 0; i < 20; i++) expect(await live(call(i))).toEqual(answer(i));
    } finally {
      hook.disable();
      parking.close();
    }
    expect(timeouts).toBe(1);
    expect(s.seen).toEqual([]);
  });

  it('a call that outwaits parkAfterMs after quick ones and an idle stretch parks the run, its answer resumes it', async () => {
    const s = slot();
    const parking = new CallParking(s, 20);
    let hold: (() => void) | undefined;
    const live = parking.wrap(
      (c) =>
        new Promise<LiveOutcome>((resolve) => {
          if (c.index < 3) resolve(answer(c.index));
          else hold = () => resolve(answer(c.index));
        }),
    );
    for (let i = 0; i < 3; i++) await live(call(i));
    // Idle past the timer's time: it lapses with nothing out.
    await new Promise((r) => setTimeout(r, 60));
    expect(s.seen).toEqual([]);
    const slow = live(call(3));
    while (s.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(s.seen).toEqual(['park']);
    hold?.();
    expect(await slow).toEqual(answer(3));
    expect(s.seen).toEqual(['park', 'resume']);
    expect(parking.close()).toBe(false);
  });
});
