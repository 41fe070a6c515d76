/**
 * The hub's memory of recent messages, which lets a submit's waiter skip its first read of a run it
 * just wrote: messages that only say the run goes on (its start, a call) do not count against
 * that; any other does. A fake subscriber delivers the messages (the channel's format is the run
 * store's, tested with real Redis in the app tests).
 */
import { EventEmitter } from 'node:events';
import { channels } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createEventHub, GOING_ON_TAGS } from './event-hub.ts';

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

  it('is never quiet before its subscription is up, or for a write before it came up', async () => {
    const { subscriber } = fakeSubscriber();
    const hub = createEventHub(subscriber);
    expect(hub.quietSince('r1', Date.now())).toBe(false);
    await hub.start();
    expect(hub.quietSince('r1', Date.now() - 60_000)).toBe(false);
    hub.close();
  });
});
