/**
 * A hand-off worker's blocking pops guarded by one timer a worker (pop-watchdog.ts, pop-wait.ts;
 * round 50 `pickup-runner`), where BullMQ's `waitForJob` armed a `setTimeout` around every pop. The
 * timer on a fake clock; then a real runner (redis-server, BullMQ, the harness's executor): the
 * watchdog timers a run, and a pop whose connection goes silent (a proxy that forwards nothing
 * more on it) still ends, its connection made again, and the worker picks up the next run.
 */
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { onRunnerHarness, type RunnerUnderTest, until, untilIdle } from '../test/runner-harness.ts';
import { blockingClientOf } from './mode-worker.ts';
import { PopWatchdog } from './pop-watchdog.ts';

describe('PopWatchdog (fake clock)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const fake = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });

  it('arms one timer for back-to-back pops of one length, and none once idle', async () => {
    fake();
    const w = new PopWatchdog();
    let expired = 0;
    for (let i = 0; i < 50; i++) {
      w.watch(6_000, () => expired++);
      await vi.advanceTimersByTimeAsync(200);
      w.clear();
      await vi.advanceTimersByTimeAsync(1);
    }
    // 50 pops over ~10 s: the first's timer, re-armed once when it found the pop under way not due.
    expect(w.arms).toBeLessThanOrEqual(3);
    expect(expired).toBe(0);
    // Idle: the timer fires once more and is not armed again.
    await vi.advanceTimersByTimeAsync(7_000);
    expect(vi.getTimerCount()).toBe(0);
    expect(expired).toBe(0);
  });

  it('ends a pop at its deadline, an earlier deadline re-arming the timer', async () => {
    fake();
    const w = new PopWatchdog();
    const ended: string[] = [];
    w.watch(6_000, () => ended.push('long'));
    await vi.advanceTimersByTimeAsync(100);
    w.clear();
    // A shorter pop (a delayed job due soon): its deadline is before the timer armed.
    w.watch(1_500, () => ended.push('short'));
    await vi.advanceTimersByTimeAsync(1_499);
    expect(ended).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(ended).toEqual(['short']);
    // A long pop after a timer armed earlier for a pop cleared: it ends at its own deadline.
    w.watch(6_000, () => ended.push('next'));
    await vi.advanceTimersByTimeAsync(5_999);
    expect(ended).toEqual(['short']);
    await vi.advanceTimersByTimeAsync(1);
    expect(ended).toEqual(['short', 'next']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('closed: no timer left, none armed', async () => {
    fake();
    const w = new PopWatchdog();
    let expired = 0;
    w.watch(1_000, () => expired++);
    w.close();
    expect(vi.getTimerCount()).toBe(0);
    w.watch(1_000, () => expired++);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(expired).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});

/** A TCP proxy to `port` whose connections can be silenced one by one (nothing forwarded either way). */
async function silencingProxy(port: number) {
  const byClientPort = new Map<number, { client: Socket; upstream: Socket }>();
  const server: Server = createServer((client) => {
    const upstream = netConnect(port, '127.0.0.1');
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    if (client.remotePort !== undefined) byClientPort.set(client.remotePort, { client, upstream });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no proxy port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    /** The connection from `localPort` forwards no byte more, either way; it stays open until closed. */
    silence(localPort: number): boolean {
      const pair = byClientPort.get(localPort);
      if (!pair) return false;
      pair.client.unpipe(pair.upstream);
      pair.upstream.unpipe(pair.client);
      // Read and dropped (not paused): a close from either side still closes both.
      pair.client.on('data', () => undefined);
      pair.upstream.on('data', () => undefined);
      return true;
    },
    async close(): Promise<void> {
      for (const { client, upstream } of byClientPort.values()) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("a hand-off worker's blocking pops (real runner)", () => {
  let redis: Redis;
  const h = onRunnerHarness('pop-watchdog-test', (up) => {
    ({ redis } = up);
  });

  /** One run added and completed (handed to the idle worker). */
  async function oneRun(t: RunnerUnderTest, id: string) {
    const outcomes = t.outcomes.length;
    await h.newRun(id);
    await t.add(id);
    await until(`${id} to complete`, () => t.outcomes.length === outcomes + 1);
    expect(t.outcomes.at(-1)).toBe('completed 1');
  }

  it('arm one watchdog timer over 20 handed runs, not one a pop', async () => {
    const t = await h.setUp('timers', true, undefined, { handOff: true, slots: 1 });
    try {
      await h.warmUp(t, 'tw');
      await untilIdle(redis, t);
      // BullMQ's watchdog is its pop's length + 1 s: 6 s at the default 5 s drain delay.
      const spy = vi.spyOn(globalThis, 'setTimeout');
      const registrations = t.worker().idleRegistrations;
      let delays: unknown[] = [];
      try {
        for (let i = 0; i < 20; i++) {
          await oneRun(t, `t${i}`);
          await untilIdle(redis, t);
        }
      } finally {
        // Read before the restore, which clears them.
        delays = spy.mock.calls.map((c) => c[1]);
        spy.mockRestore();
      }
      const watchdogs = delays.filter((ms) => ms === 6_000).length;
      // The spy saw the test's own waits (20 ms polls): it counts this process's timers.
      expect(delays.length).toBeGreaterThan(0);
      // Each run was handed to a registered pop: 20 pops.
      expect(t.worker().idleRegistrations - registrations).toBeGreaterThanOrEqual(20);
      expect(t.worker().handOffs).toBeGreaterThanOrEqual(20);
      // eb99e4b0: 20 or more (one a pop).
      expect(watchdogs).toBeLessThanOrEqual(1);
    } finally {
      await t.close();
    }
  });

  it('end a pop whose connection went silent, and pick up the next run on a new connection', async () => {
    const proxy = await silencingProxy(Number(redis.options.port));
    const t = await h.setUp('silent', true, undefined, {
      handOff: true,
      slots: 1,
      // Only the pop's own watchdog here: the runner's pick-up watchdog (a restart) off.
      env: { ISLET_REDIS_URL: proxy.url, ISLET_RUNNER_PICKUP_WATCHDOG_MS: '0' },
    });
    try {
      await h.warmUp(t, 'sw');
      const worker = t.worker();
      // A 1 s pop, so its watchdog is 2 s (the setting is BullMQ's `drainDelay`, read at each wait).
      (worker.opts as { drainDelay: number }).drainDelay = 1;
      // The next pop is a 1 s one.
      const before = worker.idleRegistrations;
      await until('a 1 s pop registered', () => worker.idleRegistrations >= before + 2);
      const blocking = blockingClientOf(worker);
      const localPort = blocking?.stream?.localPort;
      expect(localPort).toBeTypeOf('number');
      expect(proxy.silence(localPort as number)).toBe(true);
      const silenced = worker.idleRegistrations;
      // The silent pop never answers: only its watchdog ends it (2 s), the blocking connection
      // dropped and made again, and the worker registers anew on the new one.
      await until('a registration after the silent pop', () => worker.idleRegistrations > silenced, 6_000);
      expect(blockingClientOf(worker)?.stream?.localPort).not.toBe(localPort);
      await untilIdle(redis, t);
      await oneRun(t, 's1');
    } finally {
      await t.close();
      await proxy.close();
    }
  });
});
