/**
 * A binding call's `call` event in its one-seal form (core config `ISLET_CALL_ONE_SEAL`, default
 * off; services/runs call-event-reads.ts), with real processes on one Redis (test/bench/README.md
 * round 44 `outcome-seal`):
 * - flag off (the default), beside e8feb7a0's gateway and runner, every pair: this release writes
 *   the sealed form e8feb7a0 writes (`data`, no `i`), and both gateways stream every run's events
 *   byte for byte alike and answer its record alike — nothing changed for the previous release;
 * - flag on (a gateway and runner of this release with it): the events, the record's calls and
 *   the waited answer read through this release's API exactly as a flag-off run's of the same
 *   program (ids, times and durations aside), from an event stream that holds no call's `data`;
 *   e8feb7a0 reads such an event as `{}`, which is why the flag stays off this release.
 * Fails on e8feb7a0 (its reader has no one-seal form; the flag is not a setting there).
 */
import { keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppServer } from './helpers.ts';
import { call, expectReadAlike, hasCommit, type MixedReleases, startMixed } from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_ONE_SEAL_PREVIOUS_RELEASE ?? 'e8feb7a0';
const present = hasCommit(PREVIOUS);

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let on: Cluster | undefined;
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
    [head, prev, on]
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
    app = await startAppServer(async (d) => {
      const args = (d.body.arguments ?? {}) as { w?: string };
      return args.w === 'w1'
        ? { status: 500, body: '{"error":"no \\"w1\\""}' }
        : { status: 200, body: JSON.stringify({ structuredContent: { echo: args } }) };
    });
    const conn = await call(head.url, head.devKey, 'POST', '/v1/connections', {
      name: 'Echo',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'say', inputSchema: { type: 'object' } }],
    });
    expect(conn.status, conn.text).toBe(201);
    connectionId = (JSON.parse(conn.text) as { id: string }).id;
  }, 180_000);

  afterAll(async () => {
    await on?.stop();
    await app?.close();
    await mixed?.stop();
  });

  const flagOff: { id: string; text: string }[] = [];

  it(`flag off: this release writes ${PREVIOUS}'s sealed form; every pair's events and records read alike on both`, async () => {
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
      expect(await callForms(done.id)).toEqual(['type,data', 'type,data', 'type,data']);
      const a = await events(head!, done.id);
      const b = await events(prev!, done.id);
      expect(b).toBe(a);
      expect((a.match(/event: call/g) ?? []).length).toBe(3);
      expect(a).toContain('"_tag":"Failed"');
      await expectReadAlike(done.text, done.id, [head!, prev!]);
      if (runner === 'head') flagOff.push(done);
    }
    await head!.restartRunner(0);
  }, 300_000);

  it('flag on: no call event carries data; its events, calls and answer read as a flag-off run', async () => {
    const shared = [
      'ISLET_SEAL_KEYS',
      'ISLET_INTERNAL_TOKEN',
      'ISLET_JOURNAL_ARGS_KEY',
      'ISLET_WORKSPACE_ROOT',
    ];
    on = await startCluster({
      redisUrl: head!.redisUrl,
      gateways: 1,
      runners: [{ modes: ['read-only'] }],
      env: {
        ...Object.fromEntries(shared.map((name) => [name, head!.env[name] as string])),
        ISLET_CALL_ONE_SEAL: 'true',
      },
    });
    await head!.killRunner(0, 'SIGTERM');
    await prev!.killRunner(0, 'SIGTERM');
    const done = await run(on, 'os-on');
    expect(await callForms(done.id)).toEqual(['type,i,ms', 'type,i,ms', 'type,i,ms']);
    // This release reads it alike with the flag on or off.
    const sse = await events(on, done.id);
    expect(await events(head!, done.id)).toBe(sse);
    const base = flagOff[1] as { id: string; text: string };
    expect(comparable(sse, done.id)).toEqual(comparable(await events(head!, base.id), base.id));
    expect(recordOf(done.text, done.id)).toBe(recordOf(base.text, base.id));
    await expectReadAlike(done.text, done.id, [on, head!, prev!]);
    // The previous release reads the one-seal form's calls as `{}`: the writer waits a release.
    expect(await events(prev!, done.id)).toContain('event: call\ndata: {}');
  }, 240_000);
});
