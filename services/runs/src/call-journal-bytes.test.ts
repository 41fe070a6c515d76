/**
 * A binding call's two journal script calls (the claim, the outcome with its `call` event) leave
 * as core's `OneCopyCommand`, one buffer each, with ioredis's bytes for the same arguments; a
 * Cluster-less client with auto-pipelining keeps ioredis's own commands (round 38, `call-bisect`).
 * Real redis-server.
 */
import { OneCopyCommand } from '@islet/core/lua-script';
import type { BindingOutcome } from '@islet/protocol';
import { Command, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';

const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });

/** Every command `redis` sends while `body` runs (once: a command queued before the connection was ready is handed to `sendCommand` again). */
async function sentBy(redis: Redis, body: () => Promise<void>): Promise<Command[]> {
  const sent: Command[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, stream?: unknown) => {
    if (!sent.includes(command)) sent.push(command);
    return send(command, stream as never);
  }) as typeof redis.sendCommand;
  try {
    await body();
  } finally {
    redis.sendCommand = send;
  }
  return sent;
}

/** A lone call through the journal: claimed (sent now) and its outcome stored with its event. */
async function loneCall(redis: Redis, run: string): Promise<void> {
  const journal = createCallJournal({ redis, sealer: createTestSealer() });
  const claimed = await journal.claim(run, 1, {
    index: 0,
    binding: 'notes.read_note',
    argsJson: JSON.stringify({ title: 'ключ-ü — ☃', n: 1.5 }),
    source: { connectionId: 'c-1', connectionName: 'notes', name: 'read_note', kind: 'tool' },
    sendNow: true,
  });
  expect(claimed.kind).toBe('new');
  const stored = await journal.complete(run, 0, result({ note: 'é' }), {
    streamKey: `islet:run:{${run}}:events`,
    maxLen: 1000,
    type: 'call',
    sealedData: 'v1.sealed-event',
    channel: `islet:run:{${run}}:wake`,
    message: '1',
  });
  expect(stored).toEqual({ deliverySeq: 1, stored: true });
}

describe("the call journal's script calls", () => {
  it("go as one buffer each on a plain client, ioredis's bytes for the same arguments, through NOSCRIPT and after", async () => {
    await withRedis(async (redis) => {
      for (const run of ['run-bytes-1', 'run-bytes-2']) {
        const sent = (await sentBy(redis, () => loneCall(redis, run))).filter((c) =>
          ['evalsha', 'eval'].includes(c.name),
        );
        // The first run meets NOSCRIPT for each script (EVALSHA, then EVAL); the second does not.
        expect(sent.map((c) => c.name)).toEqual(
          run === 'run-bytes-1' ? ['evalsha', 'eval', 'evalsha', 'eval'] : ['evalsha', 'evalsha'],
        );
        for (const command of sent) {
          expect(command).toBeInstanceOf(OneCopyCommand);
          const ours = command.toWritable({});
          expect(Buffer.isBuffer(ours)).toBe(true);
          const theirs = new Command(command.name, [...command.args]).toWritable({});
          expect(typeof theirs).toBe('string');
          expect((ours as Buffer).equals(Buffer.from(theirs as string))).toBe(true);
        }
      }
      const stats = await redis.info('commandstats');
      const calls = (name: string) =>
        Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      expect([calls('evalsha'), calls('eval')]).toEqual([4, 2]);
      // Stored in the default layout (2, call-journal.ts): the entry, its claim part, its binding's
      // source, the sequence.
      expect(Object.keys(await redis.hgetall('islet:journal:{run-bytes-2}')).sort()).toEqual([
        '#c0',
        expect.stringMatching(/^#s:/),
        '#seq',
        '0',
      ]);
    });
  });

  it("keep ioredis's own commands on an auto-pipelined client, with the same answers", async () => {
    await withRedis(async (plain) => {
      const piped = new Redis(plain.options.port ?? 0, plain.options.host ?? '127.0.0.1', {
        enableAutoPipelining: true,
      });
      try {
        const sent = (await sentBy(piped, () => loneCall(piped, 'run-piped'))).filter((c) =>
          ['evalsha', 'eval'].includes(c.name),
        );
        expect(sent.length).toBeGreaterThanOrEqual(2);
        for (const command of sent) expect(command).not.toBeInstanceOf(OneCopyCommand);
      } finally {
        piped.disconnect();
      }
    });
  });
});
