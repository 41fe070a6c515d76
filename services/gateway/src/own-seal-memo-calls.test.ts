/**
 * The gateway's own-seal memo (own-seal-memo.ts) as its run store uses it (create-deps.ts): a
 * run's submit fields are opened from memory however many binding calls other runs make
 * meanwhile. A call's events are sealed past the memo; when they went through it, a thousand of
 * them (ten clients' hundred-call programs) pushed the submit's entries out and its waiter
 * decrypted them again. The journal's outcomes go through a memo of their own: a run's waiter reads
 * back every outcome this gateway journaled for it (the record's calls) without decrypting them.
 */
import { runFixture } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type GatewayDepsUnderTest,
  startGatewayDeps,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';

let gateway: GatewayDepsUnderTest | undefined;
let deps: TestGatewayDeps;

beforeAll(async () => {
  gateway = await startGatewayDeps();
  deps = gateway.deps;
});

afterAll(async () => {
  await gateway?.close();
});

describe('own-seal memo under binding calls', () => {
  it('a submit’s fields open from memory after 2000 call events and appended events', async () => {
    const run = runFixture('memo-run', { tenant: 't1' });
    await deps.runs.create(run);
    for (let i = 0; i < 2000; i++) {
      const event = deps.runs.callEvent(`other-${i % 20}`, {
        index: i,
        binding: 'notes.read',
        outcome: { _tag: 'Done', result: { _tag: 'Completed', value: { ok: i } } },
        arguments: { n: i },
        durationMs: 1,
      });
      // Still a real seal: any process with the key opens it.
      if (i === 0) expect(JSON.parse(deps.sealer.open(event.sealedData))).toMatchObject({ index: 0 });
    }
    for (let i = 0; i < 50; i++) await deps.runs.appendEvent(`other-${i}`, 'call.requested', { index: i });
    const opens = vi.spyOn(deps.sealer, 'open');
    const read = await deps.runs.get(run.id);
    expect(read?.code).toBe(run.code);
    expect(read?.description).toBe(run.description);
    expect(read?.request).toEqual(run.request);
    // Program, description and request came from memory: no decryption.
    expect(opens).not.toHaveBeenCalled();
    opens.mockRestore();
  });

  it('a hundred-call run’s outcomes, journaled here, are read back at its end without a decryption', async () => {
    const runId = 'memo-outcomes';
    const index = Array.from({ length: 100 }, (_, i) => i);
    await Promise.all(
      index.map(async (i) => {
        const claim = await deps.journal.claim(runId, 1, {
          index: i,
          binding: 'bench.ping',
          argsJson: JSON.stringify({ i }),
          sendNow: true,
        });
        expect(claim.kind).toBe('new');
        await deps.journal.complete(runId, i, { type: 'result', valueJson: JSON.stringify({ ok: i }) });
      }),
    );
    const opens = vi.spyOn(deps.sealer, 'open');
    const calls = await deps.journal.listCalls(runId);
    expect(calls.map((c) => c.outcome)).toEqual(
      index.map((i) => ({ type: 'result', valueJson: JSON.stringify({ ok: i }) })),
    );
    // Opened from memory; the base decrypted all 100.
    expect(opens).not.toHaveBeenCalled();
    opens.mockRestore();
    // Still real seals: another process (a journal of the plain sealer) opens them.
    const [stored] = Object.values(await deps.redis.hgetall(`islet:journal:{${runId}}`)).filter((v) =>
      v.startsWith('{'),
    );
    const sealedOutcome = (JSON.parse(stored ?? '{}') as { o?: string }).o ?? '';
    expect(JSON.parse(deps.sealer.open(sealedOutcome))).toMatchObject({ type: 'result' });
  });
});
