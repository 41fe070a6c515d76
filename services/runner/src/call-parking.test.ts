/**
 * The parking timer of one execution (call-parking.ts): one timer for the execution, restarted at
 * each stretch with calls out, not one made and cleared per call (both were on a call's path,
 * README round 30, call-lone); a call that outwaits `parkAfterMs` still parks the run, counted
 * from the last answer that arrived with calls still out (README round 46, park-timer).
 */
import { createHook } from 'node:async_hooks';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import type { BindingCall } from '@islet/protocol';
import type { LiveOutcome } from '@islet/runs';
import { afterEach, describe, expect, it, vi } from 'vitest';
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

  describe('counted from the last answer (fake clock: no wall-clock bound)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });
    // The timers and the clock faked; a lapse's decision runs in a real check phase after them.
    const fakeClock = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const advance = async (ms: number) => {
      await vi.advanceTimersByTimeAsync(ms);
      await new Promise((r) => setImmediate(r));
    };

    /** `n` calls out at once, each answered when the test says. */
    function heldCalls(parking: CallParking, n: number) {
      const answers: (() => void)[] = [];
      const live = parking.wrap(
        (c) => new Promise<LiveOutcome>((resolve) => (answers[c.index] = () => resolve(answer(c.index)))),
      );
      const results = Array.from({ length: n }, (_, i) => live(call(i)));
      return { answers, results };
    }

    it('answers arriving keep a run with calls out from parking; it parks parkAfterMs after the last one', async () => {
      fakeClock();
      const s = slot();
      const parking = new CallParking(s, 100);
      const { answers, results } = heldCalls(parking, 3);
      await advance(60);
      answers[0]?.();
      // 120 ms after the calls went out, 60 after an answer: counted from the first call it parked here.
      await advance(60);
      expect(s.seen).toEqual([]);
      answers[1]?.();
      await advance(90);
      expect(s.seen).toEqual([]);
      // 100 ms with no answer and one call out: it parks, and its answer resumes it.
      await advance(20);
      expect(s.seen).toEqual(['park']);
      answers[2]?.();
      expect(await Promise.all(results)).toEqual([answer(0), answer(1), answer(2)]);
      expect(s.seen).toEqual(['park', 'resume']);
      expect(parking.close()).toBe(false);
    });

    it("an earlier stretch's answers do not defer the next stretch's park", async () => {
      fakeClock();
      const s = slot();
      const parking = new CallParking(s, 100);
      const first = heldCalls(parking, 2);
      first.answers[0]?.();
      first.answers[1]?.();
      await Promise.all(first.results);
      await advance(30);
      const live = parking.wrap(() => new Promise<LiveOutcome>(() => undefined));
      void live(call(9));
      await advance(99);
      expect(s.seen).toEqual([]);
      await advance(1);
      expect(s.seen).toEqual(['park']);
      expect(parking.close()).toBe(true);
    });

    it("a lapse decided after its stretch ended leaves the next stretch's wait whole", async () => {
      fakeClock();
      const s = slot();
      const parking = new CallParking(s, 100);
      const first = heldCalls(parking, 1);
      // The timer lapses (no turn of the loop yielded); before its decision (the check phase) the
      // call is answered and another made.
      vi.advanceTimersByTime(100);
      first.answers[0]?.();
      await first.results[0];
      const live = parking.wrap(() => new Promise<LiveOutcome>(() => undefined));
      void live(call(7));
      await new Promise((r) => setImmediate(r));
      expect(s.seen).toEqual([]);
      await advance(99);
      expect(s.seen).toEqual([]);
      await advance(1);
      expect(s.seen).toEqual(['park']);
      expect(parking.close()).toBe(true);
    });

    it('a stream of answers parks never, with one timer deferred once a lapse, not one an answer', async () => {
      fakeClock();
      const s = slot();
      const parking = new CallParking(s, 100);
      const made = vi.spyOn(globalThis, 'setTimeout');
      const { answers, results } = heldCalls(parking, 40);
      // One answer every 10 ms for 400 ms: four times the park delay, never 100 ms without one.
      for (let i = 0; i < 40; i++) {
        await advance(10);
        answers[i]?.();
      }
      await Promise.all(results);
      expect(s.seen).toEqual([]);
      // The first timer and a remainder's at each lapse (100, 190, 280, 370 ms): not one an answer.
      expect(made.mock.calls.map((c) => c[1])).toEqual([100, 90, 90, 90, 90]);
      made.mockRestore();
      // A next stretch waits the whole delay again, not the last remainder's.
      await advance(100);
      const live = parking.wrap(() => new Promise<LiveOutcome>(() => undefined));
      void live(call(99));
      await advance(99);
      expect(s.seen).toEqual([]);
      await advance(1);
      expect(s.seen).toEqual(['park']);
      expect(parking.close()).toBe(true);
    });
  });

  it("an answer already on the runner's socket when its timer lapses is read before the run parks", async () => {
    // A socket pair: the test writes the answer, then holds the loop past the park delay (the
    // runner starved of CPU); the next turn runs the due timer before it reads the socket.
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const client = connect(port, '127.0.0.1');
    await once(client, 'connect');
    const [peer] = await accepted;
    try {
      for (const quick of [false, true]) {
        const s = slot();
        const parking = new CallParking(s, 20);
        let answerFirst: (() => void) | undefined;
        const live = parking.wrap(
          (c) =>
            new Promise<LiveOutcome>((resolve) => {
              if (c.index === 0) answerFirst = () => resolve(answer(0));
              else if (quick) resolve(answer(c.index));
            }),
        );
        // quick: the second call's answer is on its way too (the stretch ends with the socket's answer).
        const results = [live(call(0)), live(call(1))];
        if (quick) await results[1];
        client.once('data', () => answerFirst?.());
        peer.write('x');
        const until = performance.now() + 60;
        while (performance.now() < until) {
          // the loop held: the timer falls due, the answer waits on the socket
        }
        expect(await results[0]).toEqual(answer(0));
        await new Promise((r) => setImmediate(r));
        expect(s.seen).toEqual([]);
        parking.close();
      }
    } finally {
      client.destroy();
      peer.destroy();
      server.close();
    }
  });
});
