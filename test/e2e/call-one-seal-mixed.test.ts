/**
 * A binding call's `call` event in its one-seal form (core config `ISLET_CALL_ONE_SEAL`, on by
 * default since round 45; services/runs call-event-reads.ts), with real processes on one Redis
 * beside 9ec25e04 (round 44, which reads the form and writes the sealed one by default;
 * test/bench/README.md rounds 44 `outcome-seal` and 45 `seal-on`):
 * - default settings, every pair (gateway × runner, one runner at a time; a run's calls are served
 *   by its runner's gateway): this release's gateway writes the one-seal form (`i`, `ms`, no
 *   `data`), 9ec25e04's the sealed form, and both gateways stream every run's events byte for
 *   byte alike and answer its record alike; a run whose events this release wrote streams as one
 *   9ec25e04 wrote (ids, times and durations aside). A run this release ended expires its journal
 *   with its events (the same instant); one 9ec25e04 ended keeps the journal's own expiry.
 * - `ISLET_CALL_ONE_SEAL=false` (the operator's way back, for a rollback past 9ec25e04): this
 *   release writes the sealed form again, read alike by both.
 * Fails on 9ec25e04 as the head (it writes the sealed form by default).
 */
import { keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { journalKeys } from '@islet/runs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { startAppServer } from './helpers.ts';
import {
  call,
  connectApp,
  expectReadAlike,
  hasCommit,
  type MixedReleases,
  sharedWith,
  startMixed,
} from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_ONE_SEAL_PREVIOUS_RELEASE ?? '9ec25e04';
const present = hasCommit(PREVIOUS);

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let off: Cluster | undefined;
let app: Awaited<ReturnType<typeof startAppServer>> | undefined;
let connectionId = '';

/** Three calls, the second answered HTTP 500 (an error outcome with the App's body). */
const code =
  'let out = []; for (let i = 0; i < 3; i++) { try { const r = await apps.echo.say({ w: "w" + i, q: "\\"é\\u2028" }); out.push(r.structuredContent.echo.w) } catch (e) { out.push(e.name) } } return out.join()';

async function run(gw: Cluster, sessionId: string): Promise<{ id: string; text: string }> {
  const res = await call(
    gw.url,
    gw.devKey,
    'POST',
    '/v1/runs',
    { code, description: 'one seal', sessionId, turnId: 't', callId: 'c', connections: [connectionId] },
    { prefer: 'wait=30' },
  );
  const outputs = () =>
    [head, prev, off]
      .map((c) => (c?.runners.length ? c.output('runner', 0).slice(-1500) : ''))
      .join('\n---\n');
  expect(res.status, `${res.text}\n${res.status === 200 ? '' : outputs()}`).toBe(200);
  const body = JSON.parse(res.text) as { id: string; status: string };
  expect(body.status, res.text).toBe('Completed');
  return { id: body.id, text: res.text };
}

/** The run's SSE stream as one gateway sends it (it ends after the `end` event). */
const events = async (gw: Cluster, id: string) => {
  const res = await call(gw.url, gw.devKey, 'GET', `/v1/code-runs/${id}/events`);
  expect(res.status).toBe(200);
  return res.text;
};

/** The stored form of each of the run's `call` events: its fields' names. */
const callForms = async (id: string) =>
  ((await mixed!.redis.xrange(keys.runEvents(id), '-', '+')) as [string, string[]][])
    .filter(([, f]) => f[1] === 'call')
    .map(([, f]) => f.filter((_, i) => i % 2 === 0).join(','));

/** An SSE text's events, parsed, with what differs between two runs of one program left out. */
function comparable(sse: string, id: string) {
  return sse
    .split('\n\n')
    .filter((block) => block.includes('event: '))
    .map((block) => {
      // `[^\n]`, not `.`: a data line may hold U+2028 as is (JSON.stringify leaves it).
      const type = /event: ([^\n]*)/.exec(block)?.[1];
      const data = JSON.parse(/data: ([^\n]*)/.exec(block)?.[1] ?? '{}') as Record<string, unknown>;
      const text = JSON.stringify({ ...data, durationMs: typeof data.durationMs })
        .replaceAll(id, '<run>')
        .replace(/"sessionId":"[^"]*"/g, '"sessionId":""')
        .replace(/"(at|updatedAt|createdAt|endedAt|startedAt|settledAtMs|startedAtMs)":\d+/g, '"$1":0');
      return `${type} ${text}`;
    });
}

/** A record answer with its run's id, times and durations left out. */
const recordOf = (text: string, id: string) =>
  text
    .replaceAll(id, '<run>')
    .replace(/"(sessionId|session)":"[^"]*"/g, '"$1":""')
    .replace(/"(\w*At\w*|durationMs|\w*Ms)":\d+(\.\d+)?/g, '"$1":0')
    .replace(/"(operationId|callId)":"[^"]*"/g, '"$1":""');

describe.skipIf(!present)(`a call event's one-seal form beside ${PREVIOUS}`, () => {
  beforeAll(async () => {
    delete process.env.ISLET_CALL_ONE_SEAL;
    mixed = await startMixed(PREVIOUS);
    head = mixed.head;
    prev = mixed.prev;
    ({ app, connectionId } = await connectApp(
      head,
      async (d) => {
        const args = (d.body.arguments ?? {}) as { w?: string };
        return args.w === 'w1'
          ? { status: 500, body: '{"error":"no \\"w1\\""}' }
          : { status: 200, body: JSON.stringify({ structuredContent: { echo: args } }) };
      },
      'Echo',
      [{ name: 'say', inputSchema: { type: 'object' } }],
    ));
  }, 180_000);

  afterAll(async () => {
    await off?.stop();
    await app?.close();
    await mixed?.stop();
  });

  /** Runs whose calls each release's gateway served: this release's (one-seal), 9ec25e04's (sealed). */
  const served: { head: { id: string; text: string }[]; prev: { id: string; text: string }[] } = {
    head: [],
    prev: [],
  };

  it(`default settings: this release writes the one-seal form, ${PREVIOUS} the sealed; every pair's events and records read alike on both`, async () => {
    const pairs: [Cluster, 'head' | 'prev'][] = [
      [prev!, 'head'],
      [head!, 'head'],
      [prev!, 'prev'],
      [head!, 'prev'],
    ];
    for (const [gw, runner] of pairs) {
      // One runner at a time: a run's calls are served by its runner's gateway.
      if (runner === 'head') {
        if (gw === prev) await prev!.killRunner(0, 'SIGTERM');
      } else if (gw === prev) {
        await prev!.restartRunner(0);
        await head!.killRunner(0, 'SIGTERM');
      }
      const done = await run(gw, `os-${gw === head ? 'h' : 'p'}-${runner}`);
      const form = runner === 'head' ? 'type,i,ms' : 'type,data';
      expect(await callForms(done.id)).toEqual([form, form, form]);
      const a = await events(head!, done.id);
      const b = await events(prev!, done.id);
      expect(b).toBe(a);
      expect((a.match(/event: call/g) ?? []).length).toBe(3);
      expect(a).toContain('"_tag":"Failed"');
      expect(a).not.toContain('event: call\ndata: {"index":0,"durationMs"');
      await expectReadAlike(done.text, done.id, [head!, prev!]);
      // The end's writer: this release's runner expires the journal with the events.
      const [stream, journal] = (await Promise.all([
        mixed!.redis.call('PEXPIRETIME', keys.runEvents(done.id)),
        mixed!.redis.call('PEXPIRETIME', journalKeys().journal(done.id)),
      ])) as number[];
      expect(stream).toBeGreaterThan(0);
      if (runner === 'head') expect(journal).toBe(stream);
      else expect(journal).toBeLessThanOrEqual(stream as number);
      served[runner].push(done);
    }
    await head!.restartRunner(0);
    // A run whose events this release wrote (one-seal) streams as one 9ec25e04 wrote (sealed), on both.
    const one = served.head[0]!;
    const sealed = served.prev[0]!;
    for (const gw of [head!, prev!])
      expect(comparable(await events(gw, one.id), one.id)).toEqual(
        comparable(await events(gw, sealed.id), sealed.id),
      );
    expect(recordOf(one.text, one.id)).toBe(recordOf(sealed.text, sealed.id));
  }, 300_000);

  it('ISLET_CALL_ONE_SEAL=false: this release writes the sealed form again, read alike by both', async () => {
    off = await startCluster({
      redisUrl: head!.redisUrl,
      gateways: 1,
      runners: [{ modes: ['read-only'] }],
      env: { ...sharedWith(head!), ISLET_CALL_ONE_SEAL: 'false' },
    });
    await head!.killRunner(0, 'SIGTERM');
    await prev!.killRunner(0, 'SIGTERM');
    const done = await run(off, 'os-off');
    expect(await callForms(done.id)).toEqual(['type,data', 'type,data', 'type,data']);
    const sse = await events(off, done.id);
    expect(await events(head!, done.id)).toBe(sse);
    expect(await events(prev!, done.id)).toBe(sse);
    const one = served.head[1] as { id: string; text: string };
    expect(comparable(sse, done.id)).toEqual(comparable(await events(head!, one.id), one.id));
    expect(recordOf(done.text, done.id)).toBe(recordOf(one.text, one.id));
    await expectReadAlike(done.text, done.id, [off, head!, prev!]);
  }, 240_000);
});
