/**
 * What a binding call hashes on the gateway's path (call-processor → call journal): its operation
 * id (a SHA-1, UUIDv5) once, for the journal's entry and the App's request both; its arguments'
 * HMAC once. The base derived the operation id twice a call. Since round 40 (`par-calls`) the
 * SHA-1 is crypto's one-shot `hash`, no `Hash` object a call; since round 42 (`par-cpu`) the HMAC
 * is two one-shot SHA-256 `hash`es (core's hmac-once.ts), no `Hmac` object a call, the same digest.
 */
import type { BindingOutcome } from '@islet/protocol';
import { describe, expect, it, vi } from 'vitest';

const counted = vi.hoisted(() => ({ sha1: 0, sha1Objects: 0, hmac: 0, sha256: 0, digestBuffers: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    createHash: (...args: Parameters<typeof real.createHash>) => {
      if (args[0] === 'sha1') {
        counted.sha1++;
        counted.sha1Objects++;
      }
      return real.createHash(...args);
    },
    hash: (...args: Parameters<typeof real.hash>) => {
      if (args[0] === 'sha1') counted.sha1++;
      if (args[0] === 'sha256') counted.sha256++;
      // A digest returned as a Buffer: a new native buffer, dearer than the hash (round 42).
      if (args[2] === 'buffer') counted.digestBuffers++;
      return real.hash(...args);
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
const { journalKeys } = await import('./keys.ts');

describe('a call’s hashes on the gateway’s path', () => {
  const r = useSuiteRedis();

  it('derives each call’s operation id once, and journals and sends the same one', async () => {
    const journal = createCallJournal({ redis: r.a, sealer: createTestSealer() });
    const processor = createCallProcessor({ journal });
    const runId = 'hashes-run';
    const sent: string[] = [];
    const calls = 20;
    counted.sha1 = 0;
    counted.sha1Objects = 0;
    counted.hmac = 0;
    counted.sha256 = 0;
    counted.digestBuffers = 0;
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
    expect(counted.sha1Objects).toBe(0);
    // The arguments' HMAC: two one-shot SHA-256s a call (inner, outer), no `Hmac` object.
    expect(counted.hmac).toBe(0);
    expect(counted.sha256).toBe(2 * calls);
    // Every digest of a call (the operation id's, the HMAC's inner and outer) comes back as text.
    expect(counted.digestBuffers).toBe(0);
    const journaled = await journal.listCalls(runId);
    expect(journaled.map((c) => c.operationId)).toEqual(
      Array.from({ length: calls }, (_, i) => operationIdFor(runId, i)),
    );
    expect(sent.sort()).toEqual(journaled.map((c) => c.operationId).sort());
  });

  it('journals the arguments HMAC the releases before wrote (createHmac of run, index, arguments)', async () => {
    // A gateway of the previous release compares a retried call's arguments with this hash: a
    // different digest would turn every retry across a rolling upgrade into a mismatch.
    const real = await vi.importActual<typeof import('node:crypto')>('node:crypto');
    for (const hashKey of [
      undefined,
      'k'.repeat(32),
      'a key longer than the sixty-four bytes of a SHA-256 block, hashed first by RFC 2104',
    ]) {
      const journal = createCallJournal({
        redis: r.a,
        sealer: createTestSealer(),
        ...(hashKey === undefined ? {} : { argsHashKey: hashKey }),
      });
      const runId = `hmac-run-${hashKey?.length ?? 0}`;
      const argsJson = JSON.stringify({ text: 'ünïcødé 🌍', n: 7 });
      await journal.claim(runId, 1, { index: 3, binding: 'bench.ping', argsJson });
      const expected = real
        .createHmac('sha256', hashKey ?? 'islet-journal-args')
        .update(`${runId}\0${3}\0${argsJson}`)
        .digest('base64url');
      const stored = Object.values(await r.a.hgetall(journalKeys().journal(runId))).join('\n');
      expect(stored).toContain(expected);
    }
  });

  it('derives the same operation ids as the releases before (pinned UUIDv5 values)', () => {
    // Values of the base's `createHash` form (afaaca7), for the one-shot `hash` of round 40.
    expect(operationIdFor('run_01JEXAMPLE', 0)).toBe('ea486e84-a4ca-5337-987d-00d8905a744e');
    expect(operationIdFor('run_01JEXAMPLE', 17)).toBe('9c37acfb-71b8-50f7-8c72-0450af5f9555');
    expect(operationIdFor('r-é-ü', 99999)).toBe('32fad8b9-b281-5d95-b1c1-7d7218e5dafa');
    expect(operationIdFor('', 0)).toBe('7797f241-e43c-5821-92c1-00581eba9768');
    // d92635a's, for round 42's one buffer (namespace and name written into it, no concatenation).
    expect(operationIdFor('ü🌍', 42)).toBe('99561e5c-d823-52b0-99f8-7886d337234b');
  });

  it('sets the version and variant in the hex text as the bytes form did, for every variant nibble', async () => {
    // d92635a's form: the digest as a Buffer, its bytes 6 and 8 set, then hex.
    const real = await vi.importActual<typeof import('node:crypto')>('node:crypto');
    const ns = Buffer.from('6f1d2c3a9b7e4f08a1c5d3e2b4a69780', 'hex');
    const before = (runId: string, index: number) => {
      const b = real.hash('sha1', Buffer.concat([ns, Buffer.from(`${runId}:${index}`)]), 'buffer');
      b[6] = ((b[6] ?? 0) & 0x0f) | 0x50;
      b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
      const hex = b.toString('hex', 0, 16);
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    };
    const variants = new Set<string>();
    for (let index = 0; index < 500; index++) {
      expect(operationIdFor('run_variants', index)).toBe(before('run_variants', index));
      variants.add(operationIdFor('run_variants', index)[19] ?? '');
    }
    expect([...variants].sort()).toEqual(['8', '9', 'a', 'b']);
  });
});
