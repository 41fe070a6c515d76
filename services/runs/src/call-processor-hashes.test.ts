/**
 * What a binding call hashes on the gateway's path (call-processor → call journal): its operation
 * id (a SHA-1, UUIDv5) once, for the journal's entry and the App's request both; its arguments'
 * HMAC once. The base derived the operation id twice a call.
 */
import type { BindingOutcome } from '@islet/protocol';
import { describe, expect, it, vi } from 'vitest';

const counted = vi.hoisted(() => ({ sha1: 0, hmac: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    createHash: (...args: Parameters<typeof real.createHash>) => {
      if (args[0] === 'sha1') counted.sha1++;
      return real.createHash(...args);
    },
    createHmac: (...args: Parameters<typeof real.createHmac>) => {
      counted.hmac++;
      return real.createHmac(...args);
    },
  };
});

const { useSuiteRedis } = await import('../test/test-redis.ts');
const { createTestSealer } = await import('../test/test-sealer.ts');
const { createCallJournal } = await import('./call-journal.ts');
const { createCallProcessor } = await import('./call-processor.ts');
const { operationIdFor } = await import('./operation-id.ts');

describe('a call’s hashes on the gateway’s path', () => {
  const r = useSuiteRedis();

  it('derives each call’s operation id once, and journals and sends the same one', async () => {
    const journal = createCallJournal({ redis: r.a, sealer: createTestSealer() });
    const processor = createCallProcessor({ journal });
    const runId = 'hashes-run';
    const sent: string[] = [];
    const calls = 20;
    counted.sha1 = 0;
    counted.hmac = 0;
    await Promise.all(
      Array.from({ length: calls }, (_, index) =>
        processor.process({
          run: { id: runId, tenant: 't1', mode: 'read-only', toolCallId: 'c', code: 'x' },
          attempt: 1,
          call: { index, binding: 'bench.ping', argsJson: JSON.stringify({ index }) },
          policy: 'allow',
          approval: 'stop',
          send: async (ctx) => {
            sent.push(ctx.operationId);
            return { type: 'result', valueJson: '{"ok":true}' } satisfies BindingOutcome;
          },
        }),
      ),
    );
    expect(counted.sha1).toBe(calls);
    expect(counted.hmac).toBe(calls);
    const journaled = await journal.listCalls(runId);
    expect(journaled.map((c) => c.operationId)).toEqual(
      Array.from({ length: calls }, (_, i) => operationIdFor(runId, i)),
    );
    expect(sent.sort()).toEqual(journaled.map((c) => c.operationId).sort());
  });
});
