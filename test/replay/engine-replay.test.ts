/**
 * Replay with the real engine and the real journal: a run executed again from the top sees the
 * same clock, random numbers, outcomes and delivery order, and sends nothing twice.
 */
import {
  type BindingCall,
  type BindingOutcome,
  createEngine,
  type Engine,
  type RunOutcome,
} from '@islet/engine';
import {
  type CallJournal,
  createCallJournal,
  createCallProcessor,
  createDecisionStore,
  createReplayingHandler,
  UNKNOWN_OUTCOME_REASON,
} from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSealer } from '../../services/runs/test/test-sealer.ts';

const CLOCK = 1_792_486_800_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// f(n) answers after (5 - n) * 25 ms: the later-started calls finish first, so delivery order
// differs from index order, and continuations (`.then(g)`) start in delivery order.
const ORDERED = `
const order = [];
const chains = [1, 2, 3, 4].map((n) =>
  apps.x.f({ n }).then((v) => { order.push(v.n); return apps.x.g({ after: v.n }); }));
const winner = await Promise.race([apps.x.f({ n: 3 }), apps.x.f({ n: 4 })]);
const tail = await Promise.all(chains);
console.log("now", Date.now(), Math.random());
return { order, winner: winner.n, tail, r: [Math.random(), Math.random()] };
`;

describe('replay with the real engine', () => {
  let server: RedisServer;
  let redis: Redis;
  let engine: Engine;
  const sealer = createTestSealer();
  let journal: CallJournal;
  let decisions: ReturnType<typeof createDecisionStore>;
  let processor: ReturnType<typeof createCallProcessor>;
  /** Deliveries per Idempotency-Key, like an App that counts them. */
  const delivered = new Map<string, number>();
  let runSeq = 0;
  let jitter = false;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
    journal = createCallJournal({ redis, sealer });
    decisions = createDecisionStore({ redis, sealer });
    processor = createCallProcessor({ journal, decisions });
    engine = createEngine();
  });
  afterAll(async () => {
    await engine.close();
    redis.disconnect();
    await server.stop();
  });

  const app = async (call: BindingCall, key: string): Promise<BindingOutcome> => {
    delivered.set(key, (delivered.get(key) ?? 0) + 1);
    const args = JSON.parse(call.argsJson) as { n?: number };
    if (jitter) await sleep(Math.random() * 30);
    // Wide gaps: the delivery order must hold on a loaded machine.
    else if (call.binding === 'x.f') await sleep((5 - (args.n ?? 0)) * 80);
    else await sleep(5);
    return { type: 'result', valueJson: JSON.stringify({ ...args, via: call.binding }) };
  };

  /** One execution of a run: a fresh attempt, the journal as a replay view, calls through the processor. */
  async function execute(
    runId: string,
    code: string,
    opts: { policy?: (c: BindingCall) => 'allow' | 'ask' | 'deny'; sent?: string[]; grace?: number } = {},
  ): Promise<RunOutcome> {
    // As the runner does it (services/runner/src/run-executor.ts): a fresh attempt, the journal
    // as it stands, the run's fixed clock and seed.
    const attempt = await journal.nextAttempt(runId);
    const replay = createReplayingHandler({
      journal: await journal.list(runId),
      live: async (call) => {
        opts.sent?.push(`${call.index}:${call.binding}`);
        return processor.process({
          run: { id: runId, tenant: 't1', mode: 'read-only', toolCallId: 'call-9', code },
          attempt,
          call,
          policy: opts.policy?.(call) ?? 'allow',
          approval: 'stop',
          ...(opts.grace ? { unknownGraceMs: opts.grace } : {}),
          send: ({ idempotencyKey }) => app(call, idempotencyKey),
        });
      },
      stallMs: 2000,
    });
    try {
      return await engine.execute(code, {
        bindings: ['x.f', 'x.g', 'x.send'],
        clockMs: CLOCK,
        randomSeed: runId,
        limits: { timeoutMs: 20_000 },
        onCall: replay.handler,
      });
    } finally {
      replay.close();
    }
  }

  const shape = (o: RunOutcome) => ({
    status: o.status,
    valueJson: o.valueJson,
    logs: o.logs,
    calls: o.calls.map((c) => [c.index, c.binding, c.argsJson, c.outcome]),
  });

  it('replays Date.now, Math.random, Promise.all and Promise.race exactly, sending nothing again', async () => {
    const runId = `replay-${runSeq++}`;
    const first = await execute(runId, ORDERED);
    expect(first.status).toBe('completed');
    const value = JSON.parse(first.valueJson ?? '{}') as { order: number[]; winner: number };
    expect(value.order).toEqual([4, 3, 2, 1]); // delivery order, not index order
    expect(value.winner).toBe(4);
    expect(first.logs[0]?.text).toMatch(new RegExp(`^now ${CLOCK} 0\\.\\d+`));
    const sentAgain: string[] = [];
    const second = await execute(runId, ORDERED, { sent: sentAgain });
    const third = await execute(runId, ORDERED, { sent: sentAgain });
    expect(shape(second)).toEqual(shape(first));
    expect(shape(third)).toEqual(shape(first));
    expect(sentAgain).toEqual([]);
    for (const [key, count] of delivered) if (key.startsWith(`${runId}:`)) expect(count).toBe(1);
  });

  it('replays exactly under random App latencies (many runs, each replayed twice)', async () => {
    jitter = true;
    try {
      const seen = new Set<string>();
      for (let k = 0; k < 25; k++) {
        const runId = `jitter-${runSeq++}`;
        const first = await execute(runId, ORDERED);
        seen.add(JSON.stringify((JSON.parse(first.valueJson ?? '{}') as { order: number[] }).order));
        const sent: string[] = [];
        expect(shape(await execute(runId, ORDERED, { sent }))).toEqual(shape(first));
        expect(shape(await execute(runId, ORDERED, { sent }))).toEqual(shape(first));
        expect(sent).toEqual([]);
      }
      expect(seen.size).toBeGreaterThan(1); // the latencies really produced different orders
    } finally {
      jitter = false;
    }
  });

  it('would diverge without delivery-order sequencing (the check above can fail)', async () => {
    const runId = `naive-${runSeq++}`;
    const first = await execute(runId, ORDERED);
    const entries = await journal.list(runId);
    const naive = await engine.execute(ORDERED, {
      bindings: ['x.f', 'x.g', 'x.send'],
      clockMs: CLOCK,
      randomSeed: runId,
      onCall: async (call) =>
        entries.find((e) => e.index === call.index)?.outcome ?? {
          type: 'stop',
          code: 'replay-mismatch',
          message: 'x',
        },
    });
    expect(shape(naive)).not.toEqual(shape(first));
  });

  it('stops at an ask, replays after the decision and sends the waiting call once', async () => {
    const runId = `ask-${runSeq++}`;
    const code = `
      const [a, b] = await Promise.all([apps.x.f({ n: 1 }), apps.x.f({ n: 2 })]);
      const sent = await apps.x.send({ to: "team@example.com", a: a.n, b: b.n });
      return { sent, t: Date.now(), r: Math.random() };`;
    const policy = (c: BindingCall) => (c.binding === 'x.send' ? 'ask' : 'allow');
    const first = await execute(runId, code, { policy });
    expect(first.status).toBe('stopped');
    expect(first.stop?.code).toBe('suspended');
    const [pending] = await decisions.listPending('t1');
    expect(pending?.request).toMatchObject({
      capability: { action: 'apps.call', target: 'x/send' },
      app: { callId: 'call-9:2', arguments: { to: 'team@example.com', a: 1, b: 2 } },
      code: { run: runId, index: 2 },
    });
    expect(await decisions.answer('t1', runId, 2, { allow: true, by: 'alice' })).toMatchObject({ ok: true });
    const sent: string[] = [];
    const second = await execute(runId, code, { policy, sent });
    expect(second.status).toBe('completed');
    expect(sent).toEqual(['2:x.send']);
    expect(JSON.parse(second.valueJson ?? '{}')).toMatchObject({
      sent: { via: 'x.send', a: 1, b: 2 },
      t: CLOCK,
    });
    expect(delivered.get(`${runId}:2`)).toBe(1);
    expect(delivered.get(`${runId}:0`)).toBe(1);
  });

  it('raises AppCallDenied in the program after a denial, and replays the denial', async () => {
    const runId = `deny-${runSeq++}`;
    const code = `try { await apps.x.send({ to: "x" }); return "sent" } catch (e) { return e.name + ": " + e.message }`;
    const policy = () => 'ask' as const;
    expect((await execute(runId, code, { policy })).stop?.code).toBe('suspended');
    await decisions.answer('t1', runId, 0, { allow: false, by: 'bob' });
    const second = await execute(runId, code, { policy });
    expect(JSON.parse(second.valueJson ?? '""')).toMatch(/^AppCallDenied: /);
    const third = await execute(runId, code, { policy });
    expect(third.valueJson).toBe(second.valueJson);
    expect(delivered.get(`${runId}:0`)).toBeUndefined();
  });

  it('stops with replay-mismatch when the program makes other calls, and sends nothing', async () => {
    const runId = `mismatch-${runSeq++}`;
    await execute(runId, 'return await apps.x.f({ n: 1 })');
    const sent: string[] = [];
    const changed = await execute(runId, 'return await apps.x.f({ n: 2 })', { sent });
    expect(changed.status).toBe('stopped');
    expect(changed.stop?.code).toBe('replay-mismatch');
    const other = await execute(runId, 'return await apps.x.g({ n: 1 })', { sent });
    expect(other.stop?.code).toBe('replay-mismatch');
    expect(sent).toEqual([]);
    expect(delivered.get(`${runId}:0`)).toBe(1);
  });

  it('reports a call sent before a crash as AppCallFailed (outcome unknown) and never resends it', async () => {
    const runId = `unknown-${runSeq++}`;
    const attempt = await journal.nextAttempt(runId);
    // The first execution's gateway claimed and sent call 0, then died before journaling.
    await journal.claim(runId, attempt, { index: 0, binding: 'x.f', argsJson: '{"n":1}' });
    await journal.markSent(runId, 0);
    const code = `try { return await apps.x.f({ n: 1 }) } catch (e) { return { name: e.name, reason: e.details.reason } }`;
    const out = await execute(runId, code);
    expect(JSON.parse(out.valueJson ?? '{}')).toEqual({
      name: 'AppCallFailed',
      reason: UNKNOWN_OUTCOME_REASON,
    });
    expect(delivered.get(`${runId}:0`)).toBeUndefined();
    const again = await execute(runId, code);
    expect(again.valueJson).toBe(out.valueJson);
  });

  it('waits for a call still finishing on a live gateway instead of reporting it unknown', async () => {
    const runId = `grace-${runSeq++}`;
    const attempt = await journal.nextAttempt(runId);
    // The first execution's runner died; its gateway is still waiting for the App.
    await journal.claim(runId, attempt, { index: 0, binding: 'x.f', argsJson: '{"n":1}' });
    await journal.markSent(runId, 0);
    setTimeout(() => void journal.complete(runId, 0, { type: 'result', valueJson: '{"late":true}' }), 300);
    const code = `try { return await apps.x.f({ n: 1 }) } catch (e) { return e.details.reason }`;
    const out = await execute(runId, code, { grace: 5000 });
    expect(JSON.parse(out.valueJson ?? '{}')).toEqual({ late: true });
    expect(delivered.get(`${runId}:0`)).toBeUndefined(); // not resent by the new execution
  });

  it('ends a diverged wait with replay-mismatch instead of hanging', async () => {
    const runId = `stall-${runSeq++}`;
    const code =
      'const [a, b] = await Promise.all([apps.x.f({ n: 1 }), apps.x.f({ n: 4 })]); return [a.n, b.n]';
    await execute(runId, code); // call 1 (n: 4) is delivered first
    // Now the program only makes call 0: its outcome (seq 2) waits for seq 1, which never comes.
    const replay = createReplayingHandler({
      journal: await journal.list(runId),
      stallMs: 300,
      live: async () => ({ outcome: { type: 'stop', code: 'cancelled', message: 'no live calls here' } }),
    });
    const out = await engine.execute('return await apps.x.f({ n: 1 })', {
      bindings: ['x.f'],
      onCall: replay.handler,
      clockMs: CLOCK,
      limits: { timeoutMs: 20_000, timeBudget: 'excluding-binding-waits' },
    });
    replay.close();
    // Ended by the stall's mismatch, not by the 20 s limit it would otherwise wait out ('timeout').
    expect(out.stop?.code).toBe('replay-mismatch');
  });
});
