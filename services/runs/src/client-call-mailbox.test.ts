import { keys } from '@islet/core';
import type { BindingOutcome } from '@islet/protocol';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { type ClientCallMailbox, createClientCallMailbox } from './client-call-mailbox.ts';

const sealer = createTestSealer();
const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });

async function connectedClients(redis: Redis): Promise<number> {
  const list = (await redis.client('LIST')) as string;
  return list.trim().split('\n').length;
}

describe('client-call mailbox on a real redis', () => {
  const r = useSuiteRedis();
  // Two gateway replicas: each with its command connection and its one subscriber connection.
  let subscribers: Redis[] = [];
  let holder: ClientCallMailbox;
  let other: ClientCallMailbox;
  beforeAll(() => {
    subscribers = [new Redis(r.server.url), new Redis(r.server.url)];
    holder = createClientCallMailbox({ redis: r.a, subscriber: subscribers[0]!, sealer, timeoutMs: 60_000 });
    other = createClientCallMailbox({ redis: r.b, subscriber: subscribers[1]!, sealer, timeoutMs: 60_000 });
  });
  afterAll(() => {
    holder.close();
    other.close();
    for (const s of subscribers) s.disconnect();
  });

  it('128 waiting calls hold no connection each; every answer, delivered at another replica, reaches its own waiter once', async () => {
    const runId = `run-${Date.now()}`;
    await r.a.hset(keys.run(runId), 'status', 'Running');
    const before = await connectedClients(r.a);
    const waits: Promise<BindingOutcome | null>[] = [];
    for (let index = 0; index < 128; index++) {
      await holder.open(runId, index, 1);
      waits.push(holder.wait(runId, index));
    }
    // Every waiter has registered (each looked once and found nothing).
    await expect.poll(() => r.a.exists(keys.clientCallPending(runId, 127))).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const during = await connectedClients(r.a);
    expect(during - before).toBeLessThanOrEqual(1);

    for (let index = 0; index < 128; index++) {
      expect(await other.deliver(runId, index, result({ index }))).toBe('accepted');
    }
    const answers = await Promise.all(waits);
    expect(answers).toEqual(Array.from({ length: 128 }, (_, index) => result({ index })));
    // Only the first answer to a pending call is taken.
    expect(await other.deliver(runId, 0, result('again'))).toBe('not-pending');
    expect(await connectedClients(r.a)).toBeLessThanOrEqual(before + 1);
  });

  it('a wait ends without an answer when the run ended, and the call is no longer pending', async () => {
    const runId = `run-ended-${Date.now()}`;
    await r.a.hset(keys.run(runId), 'status', 'Running');
    await holder.open(runId, 0, 1);
    const wait = holder.wait(runId, 0);
    await r.a.hset(keys.run(runId), 'status', 'Cancelled');
    expect(await wait).toBeNull();
    expect(await r.a.exists(keys.clientCallPending(runId, 0))).toBe(0);
    expect(await other.deliver(runId, 0, result('late'))).toBe('not-pending');
  });

  it('an answer delivered before the wait starts is still taken', async () => {
    const runId = `run-early-${Date.now()}`;
    await r.a.hset(keys.run(runId), 'status', 'Running');
    await holder.open(runId, 3, 1);
    expect(await other.deliver(runId, 3, result('early'))).toBe('accepted');
    expect(await holder.wait(runId, 3)).toEqual(result('early'));
  });
});
