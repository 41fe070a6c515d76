/**
 * The hub's memory of recent messages, which lets a submit's waiter skip its first read of a run it
 * just wrote: messages that only say the run goes on (its start, a call) do not count against
 * that; any other does. A fake subscriber delivers the messages (the channel's format is the run
 * store's, tested with real Redis in the app tests).
 */
import { EventEmitter } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { channels } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { createEventHub, GOING_ON_TAGS, RECENT_RUNS } from './event-hub.ts';

function fakeSubscriber() {
  const emitter = new EventEmitter();
  const subscriber = Object.assign(emitter, { subscribe: async () => 3 });
  return {
    subscriber: subscriber as unknown as Redis,
    publish: (message: string) => emitter.emit('message', channels.runEvents, message),
  };
}

describe('event hub: quietSince', () => {
  it("ignores a run's start and its calls, not its end or a move to Waiting", async () => {
    const { subscriber, publish } = fakeSubscriber();
    const hub = createEventHub(subscriber);
    await hub.start();
    const written = Date.now();
    expect(hub.quietSince('r1', written)).toBe(true);
    const heard: Array<string | undefined> = [];
    const off = hub.listen('r1', (tag) => heard.push(tag));
    publish('r1 running');
    publish('r1 call');
    publish('r1 log');
    expect(hub.quietSince('r1', written)).toBe(true);
    // Listeners still hear every message (SSE readers wake on them).
    expect(heard).toEqual(['running', 'call', 'log']);
    expect([...GOING_ON_TAGS].sort()).toEqual(['call', 'log', 'running']);
    // A bare id (a move to Waiting, a transition without a tag) and an end are acted on.
    publish('r1');
    expect(hub.quietSince('r1', written)).toBe(false);
    publish('r2 end [[],[]]');
    expect(hub.quietSince('r2', written)).toBe(false);
    off();
    hub.close();
  });

  it('remembers at least the last RECENT_RUNS runs, bounded, without walking its memory a message', async () => {
    const { subscriber, publish } = fakeSubscriber();
    const hub = createEventHub(subscriber);
    await hub.start();
    const written = Date.now();
    // Past RECENT_RUNS runs, forgetting the oldest one message at a time walked the deleted
    // entries at the Map's front on every message (round 28): no iteration of the memory now.
    const keys = vi.spyOn(Map.prototype, 'keys');
    try {
      for (let i = 0; i < RECENT_RUNS; i++) publish(`old-${i} end [[],[]]`);
      publish('r1 end [[],[]]');
      for (let i = 1; i < RECENT_RUNS; i++) publish(`r-${i} end [[],[]]`);
      expect(keys).not.toHaveBeenCalled();
    } finally {
      keys.mockRestore();
    }
    // r1 and the RECENT_RUNS - 1 runs after it are remembered.
    expect(hub.quietSince('r1', written)).toBe(false);
    expect(hub.quietSince(`r-${RECENT_RUNS - 1}`, written)).toBe(false);
    // Bounded: after two generations more, r1 is forgotten (a waiter then reads the run: safe).
    for (let i = 0; i < 2 * RECENT_RUNS; i++) publish(`new-${i} end [[],[]]`);
    expect(hub.quietSince('r1', written)).toBe(true);
    expect(hub.quietSince(`new-${2 * RECENT_RUNS - 1}`, written)).toBe(false);
    hub.close();
  });

  it('remembers a run by its id alone, not by the end message the id was cut from', async () => {
    const { subscriber, publish } = fakeSubscriber();
    const hub = createEventHub(subscriber);
    await hub.start();
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const written = Date.now();
    // Each end as ioredis hands it over: a string of its own, decoded from the socket's bytes,
    // carrying the pushed record (here 8 KB). The ids are as long as a run id (a slice of 13
    // characters or more is a view into its whole string in V8).
    const pushed = JSON.stringify([['status', 'Completed', 'result', 'x'.repeat(8 * 1024)], []]);
    const RUNS = 12_000;
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < RUNS; i++) {
      const id = `run-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`;
      publish(Buffer.from(`${id} end ${pushed}`).toString());
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Remembered by id: ~100 bytes a run (the base kept every message whole: 12,000 x 8 KB, ~98 MB).
    expect(grown).toBeLessThan(RUNS * 1024);
    expect(
      hub.quietSince(`run-${String(RUNS - 1).padStart(8, '0')}-0000-4000-8000-000000000000`, written),
    ).toBe(false);
    hub.close();
  });

  it('is never quiet before its subscription is up, or for a write before it came up', async () => {
    const { subscriber } = fakeSubscriber();
    const hub = createEventHub(subscriber);
    expect(hub.quietSince('r1', Date.now())).toBe(false);
    await hub.start();
    expect(hub.quietSince('r1', Date.now() - 60_000)).toBe(false);
    hub.close();
  });
});

/** A fake subscriber that records (UN)SUBSCRIBEs and answers SUBSCRIBE when the test says so. */
function recordingSubscriber() {
  const emitter = new EventEmitter();
  const commands: string[] = [];
  const pending: Array<() => void> = [];
  const subscriber = Object.assign(emitter, {
    subscribe: (...names: string[]) => {
      commands.push(`SUBSCRIBE ${names.join(' ')}`);
      if (names.includes(channels.runEvents)) return Promise.resolve(names.length);
      return new Promise<number>((resolve) => pending.push(() => resolve(names.length)));
    },
    unsubscribe: async (...names: string[]) => {
      commands.push(`UNSUBSCRIBE ${names.join(' ')}`);
      return 0;
    },
  });
  return {
    subscriber: subscriber as unknown as Redis,
    commands,
    answer: () => {
      for (const fn of pending.splice(0)) fn();
    },
    emit: (channel: string, message: string) => emitter.emit('message', channel, message),
  };
}

/** A hub started on a recording subscriber, its start's SUBSCRIBE already cleared from `commands`. */
async function startedHub() {
  const recording = recordingSubscriber();
  const hub = createEventHub(recording.subscriber);
  await hub.start();
  recording.commands.length = 0;
  return { hub, ...recording };
}

describe('event hub: session, feed and progress channels on demand', () => {
  it('subscribes to the run-event channel only at start', async () => {
    const { subscriber, commands } = recordingSubscriber();
    const hub = createEventHub(subscriber);
    await hub.start();
    expect(commands).toEqual([`SUBSCRIBE ${channels.runEvents}`]);
    hub.close();
  });

  it("subscribes at a session's first listener, resolves once subscribed, and leaves at its last", async () => {
    const { hub, commands, answer, emit } = await startedHub();
    let firstReady = false;
    const heard: string[] = [];
    const first = hub
      .listenSession('idx-a', () => heard.push('a1'))
      .then((off) => {
        firstReady = true;
        return off;
      });
    const second = hub.listenSession('idx-b', () => heard.push('b'));
    await Promise.resolve();
    // One SUBSCRIBE for both listeners, and neither is told it listens before Redis answered.
    expect(commands).toEqual([`SUBSCRIBE ${channels.sessionRuns}`]);
    expect(firstReady).toBe(false);
    answer();
    const offA = await first;
    const offB = await second;
    expect(firstReady).toBe(true);
    emit(channels.sessionRuns, 'idx-a');
    emit(channels.sessionRuns, 'idx-b');
    emit(channels.sessionRuns, 'idx-other');
    expect(heard).toEqual(['a1', 'b']);
    expect(hub.onDemandState().session).toEqual({ listeners: 2, subscribes: 1 });
    offA();
    offA();
    expect(commands).toEqual([`SUBSCRIBE ${channels.sessionRuns}`]);
    offB();
    expect(commands).toEqual([`SUBSCRIBE ${channels.sessionRuns}`, `UNSUBSCRIBE ${channels.sessionRuns}`]);
    expect(hub.onDemandState().session).toEqual({ listeners: 0, subscribes: 1 });
    emit(channels.sessionRuns, 'idx-a');
    expect(heard).toEqual(['a1', 'b']);
    // A listener after the last left subscribes again.
    const again = hub.listenSession('idx-a', () => heard.push('a2'));
    answer();
    const offAgain = await again;
    emit(channels.sessionRuns, 'idx-a');
    expect(heard).toEqual(['a1', 'b', 'a2']);
    expect(hub.onDemandState().session).toEqual({ listeners: 1, subscribes: 2 });
    offAgain();
    hub.close();
  });

  it("keys a tenant's feed listeners by tenant, apart from the session channel", async () => {
    const { hub, commands, answer, emit } = await startedHub();
    const heard: string[] = [];
    const listening = hub.listenFeed('t1', () => heard.push('t1'));
    answer();
    const off = await listening;
    expect(commands).toEqual([`SUBSCRIBE ${channels.tenantFeed}`]);
    emit(channels.tenantFeed, 't2');
    emit(channels.tenantFeed, 't1');
    // A session index key equal to the tenant id is not the tenant's feed.
    emit(channels.sessionRuns, 't1');
    expect(heard).toEqual(['t1']);
    expect(hub.onDemandState()).toEqual({
      session: { listeners: 0, subscribes: 0 },
      feed: { listeners: 1, subscribes: 1 },
      progress: { listeners: 0, subscribes: 0 },
    });
    off();
    expect(commands).toEqual([`SUBSCRIBE ${channels.tenantFeed}`, `UNSUBSCRIBE ${channels.tenantFeed}`]);
    hub.close();
  });

  it("hears runs' progress only while a stream follows it; progress never counts against quietSince", async () => {
    const { hub, commands, answer, emit } = await startedHub();
    const written = Date.now();
    const heard: Array<string | undefined> = [];
    const off = hub.listen('r1', (tag) => heard.push(tag));
    // Nobody follows: nothing is subscribed, so nothing arrives (a message here stands for one
    // Redis would not send).
    expect(commands).toEqual([]);
    const following = hub.followProgress();
    answer();
    const unfollow = await following;
    expect(commands).toEqual([`SUBSCRIBE ${channels.runProgress}`]);
    emit(channels.runProgress, 'r1 running');
    emit(channels.runProgress, 'r1 call');
    emit(channels.runProgress, 'r1 log');
    expect(heard).toEqual(['running', 'call', 'log']);
    expect(hub.quietSince('r1', written)).toBe(true);
    // An older runner's progress on the run-event channel still reaches the listeners.
    emit(channels.runEvents, 'r1 running');
    expect(heard).toEqual(['running', 'call', 'log', 'running']);
    expect(hub.quietSince('r1', written)).toBe(true);
    unfollow();
    unfollow();
    expect(commands).toEqual([`SUBSCRIBE ${channels.runProgress}`, `UNSUBSCRIBE ${channels.runProgress}`]);
    expect(hub.onDemandState().progress).toEqual({ listeners: 0, subscribes: 1 });
    emit(channels.runEvents, 'r1 end [[],[]]');
    expect(heard.at(-1)).toBe('end');
    expect(hub.quietSince('r1', written)).toBe(false);
    off();
    hub.close();
  });

  it('still resolves when the SUBSCRIBE fails (the stream falls back to its polling)', async () => {
    const emitter = new EventEmitter();
    const subscriber = Object.assign(emitter, {
      subscribe: async (...names: string[]) => {
        if (names.includes(channels.sessionRuns)) throw new Error('Connection is closed.');
        return names.length;
      },
      unsubscribe: async () => 0,
    }) as unknown as Redis;
    const hub = createEventHub(subscriber);
    await hub.start();
    const off = await hub.listenSession('idx', () => {});
    expect(hub.onDemandState().session.listeners).toBe(1);
    off();
    expect(hub.onDemandState().session.listeners).toBe(0);
    hub.close();
  });
});
