/**
 * An allowed call to an http App: its request (body, headers, webhook signature) is made while the
 * claim's script is on its way to Redis, not after its reply; and its outcome is serialised once,
 * for the journal's seal and the runner's answer both (the base stringified it again for the batch
 * line and for the lone call's reply). The answers are the bytes they were.
 */
import { createHmac } from 'node:crypto';
import { createRedis } from '@islet/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayDepsUnderTest, startGatewayDeps, toolRun } from '../test/gateway-harness.ts';
import { buildApp } from './app.ts';
import { openSigning, signatureOf } from './app-signing.ts';
import type { Connection } from './connections.ts';

const INTERNAL = 'internal-token-for-early-tests';
let gateway: GatewayDepsUnderTest;
let app: Awaited<ReturnType<typeof buildApp>> | undefined;

beforeAll(async () => {
  gateway = await startGatewayDeps({ ISLET_INTERNAL_TOKEN: INTERNAL });
});

afterAll(async () => {
  await app?.close();
  await gateway?.close();
});

const isAppBody = (v: unknown) =>
  v !== null && typeof v === 'object' && 'context' in v && 'tool' in v && 'arguments' in v;
const isResult = (v: unknown) =>
  v !== null && typeof v === 'object' && (v as { type?: unknown }).type === 'result' && 'valueJson' in v;
const isSource = (v: unknown) =>
  v !== null && typeof v === 'object' && Object.keys(v).join() === 'connectionId,connectionName,name,kind';
/** An outcome, or an answer carrying one (a batch line, a lone call's reply). */
const isOutcome = (v: unknown) =>
  isResult(v) || (v !== null && typeof v === 'object' && isResult((v as { outcome?: unknown }).outcome));

describe('an allowed http call on the gateway', () => {
  it('has its App request made before its claim is answered, and its outcome serialised once', async () => {
    const deps = gateway.deps;
    const tenant = 'early';
    const runId = 'early-run';
    const { connectionId, binding } = await toolRun(deps, {
      tenant,
      connectionName: 'Early',
      tool: 'put',
      runId,
    });
    const sent: Array<{ headers: Record<string, string>; body: string }> = [];
    deps.postToApp = async (_url, headers, body) => {
      sent.push({ headers, body });
      return { status: 200, text: '{"ok":true}' };
    };
    // How many App bodies were made when each claim's reply came back.
    let bodiesMade = 0;
    let outcomesSerialised = 0;
    let sourcesSerialised = 0;
    const stringify = JSON.stringify;
    const spy = vi.spyOn(JSON, 'stringify').mockImplementation(((value: unknown, ...rest: never[]) => {
      if (isAppBody(value)) bodiesMade++;
      if (isOutcome(value)) outcomesSerialised++;
      if (isSource(value)) sourcesSerialised++;
      return stringify(value, ...rest);
    }) as typeof JSON.stringify);
    const claim = deps.journal.claim.bind(deps.journal);
    const madeAtReply: number[] = [];
    deps.journal.claim = async (...args) => {
      const reply = await claim(...args);
      madeAtReply.push(bodiesMade);
      return reply;
    };
    app = await buildApp(deps);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const attempt = await deps.journal.nextAttempt(runId);
    expect(attempt).toBe(1);

    const calls = Array.from({ length: 20 }, (_, index) => ({
      index,
      binding,
      argsJson: stringify({ n: index }),
    }));
    const res = await fetch(`${base}/internal/v1/code-runs/${runId}/call-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
      body: stringify({ attempt, calls }),
    });
    const text = await res.text();
    const lone = await fetch(`${base}/internal/v1/code-runs/${runId}/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL}`, 'content-type': 'application/json' },
      body: stringify({ attempt, index: 20, binding, argsJson: '{"n":20}' }),
    });
    const loneText = await lone.text();
    spy.mockRestore();

    // Every claim of the batch came back with all twenty requests made already (the base made
    // each after its claim's reply: none were made when the first came back).
    expect(madeAtReply.slice(0, 20)).toEqual(Array(20).fill(20));
    expect(madeAtReply[20]).toBe(21);
    // One serialisation of each outcome (the base: a second for the answer's line or reply).
    expect(outcomesSerialised).toBe(21);
    expect(bodiesMade).toBe(21);
    // The binding's source serialised for the journal once for the run (the base: once a call).
    expect(sourcesSerialised).toBe(1);

    // The answers are the bytes JSON.stringify made of them.
    const lines = text.split('\n').filter(Boolean);
    expect(lines).toHaveLength(20);
    for (const line of lines) {
      const parsed = JSON.parse(line) as { index: number; deliverySeq: number };
      expect(line).toBe(
        stringify({
          index: parsed.index,
          status: 200,
          outcome: { type: 'result', valueJson: '{"ok":true}' },
          deliverySeq: parsed.deliverySeq,
        }),
      );
    }
    expect(lone.status).toBe(200);
    expect(lone.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(loneText).toBe(
      stringify({ outcome: { type: 'result', valueJson: '{"ok":true}' }, deliverySeq: 21 }),
    );

    // Each request is the call's own and carries a signature the App can check.
    const connection = (await deps.connections.get(tenant, connectionId)) as Connection;
    const secret = openSigning(deps.sealer, connection.sealedSigning as string).current;
    expect(sent).toHaveLength(21);
    const byIndex = new Map(
      sent.map((s) => [(JSON.parse(s.body) as { context: { callIndex: number } }).context.callIndex, s]),
    );
    for (let i = 0; i <= 20; i++) {
      const s = byIndex.get(i);
      expect(JSON.parse(s?.body ?? '{}')).toMatchObject({ tool: 'put', arguments: { n: i } });
      const h = s?.headers ?? {};
      expect(h['idempotency-key']).toBe(`${runId}:${i}`);
      expect(h['webhook-signature']).toBe(
        signatureOf(secret, h['webhook-id'] ?? '', Number(h['webhook-timestamp']), s?.body ?? ''),
      );
    }
    // Journaled once each, in the journal's order.
    const journaled = await deps.journal.listCalls(runId);
    expect(journaled.map((c) => c.state)).toEqual(Array(21).fill('done'));
    expect(new Set(journaled.map((c) => c.deliverySeq)).size).toBe(21);
    // Stored as the previous release stores them: its source text, and its arguments' HMAC (the
    // key given as a string), so either release's claim of the same call matches.
    const redis = createRedis(gateway.server.url);
    try {
      const journalKey = `islet:journal:{${runId}}`;
      const raw = await redis.hget(journalKey, '3');
      const entry = JSON.parse(raw ?? '{}') as { h?: string; s: string };
      // Layout 2 (ISLET_WRITE_FORMAT=2, call-journal.ts): the hash in the claim part `<tk> <h> <a>`,
      // the source's text at `#s:<id>`.
      const h = entry.h ?? ((await redis.hget(journalKey, '#c3')) ?? '').split(' ')[1];
      const sourceText = entry.h ? entry.s : await redis.hget(journalKey, `#s:${entry.s}`);
      expect(entry.h === undefined).toBe(gateway.config.ISLET_WRITE_FORMAT === '2');
      const key = gateway.config.ISLET_JOURNAL_ARGS_KEY || 'islet-journal-args';
      expect(h).toBe(createHmac('sha256', key).update(`${runId}\0${3}\0{"n":3}`).digest('base64url'));
      expect(sourceText).toBe(
        stringify({ connectionId, connectionName: 'Early', name: 'put', kind: 'tool' }),
      );
    } finally {
      redis.disconnect();
    }
  });

  it('makes no request early in a later execution, whose calls replay', async () => {
    const deps = gateway.deps;
    const runId = 'early-replay';
    const { binding } = await toolRun(deps, {
      tenant: 'early-replay',
      connectionName: 'Replay',
      tool: 'put',
      runId,
    });
    let posts = 0;
    deps.postToApp = async () => {
      posts++;
      return { status: 200, text: '{"ok":true}' };
    };
    const { createBindingCalls } = await import('./binding-calls.ts');
    const bindingCalls = createBindingCalls(deps);
    const signal = new AbortController().signal;
    const first = await deps.journal.nextAttempt(runId);
    await Promise.all(
      [0, 1, 2].map((index) => bindingCalls.serve(runId, first, { index, binding, argsJson: '{}' }, signal)),
    );
    expect(posts).toBe(3);
    const second = await deps.journal.nextAttempt(runId);
    let bodiesMade = 0;
    const stringify = JSON.stringify;
    const spy = vi.spyOn(JSON, 'stringify').mockImplementation(((value: unknown, ...rest: never[]) => {
      if (isAppBody(value)) bodiesMade++;
      return stringify(value, ...rest);
    }) as typeof JSON.stringify);
    const replayed = await Promise.all(
      [0, 1, 2].map((index) => bindingCalls.serve(runId, second, { index, binding, argsJson: '{}' }, signal)),
    );
    spy.mockRestore();
    expect(replayed.map((r) => r?.deliverySeq)).toEqual([1, 2, 3]);
    expect(posts).toBe(3);
    expect(bodiesMade).toBe(0);
  });
});
