/**
 * The next cuts of format 2 beside the previous release, with real processes (test/bench/README.md
 * round 43 `format-43`): this release's runner pushes a waited run's end with calls as `<id> end3`
 * (its journal's entries and sources as JSON values) from END3_MIN_BYTES (1 KiB), and
 * its admission leaves a create entry's `"o":0` out. a0565cd2 reads both (round 42's
 * `callsOfPushed`; its fold reads `o` only as `== 1`) and writes neither. Both releases' gateways
 * and runners on one Redis, one tenant, every pair (gateway × runner, the other runner stopped): a
 * run of 3 calls (end3 from this release's runner), one of 30 (end3 too) and one of
 * none, the tool's and the connection's names a tenant's strings (quotes, backslashes, control
 * characters, U+2028, a lone surrogate) that the pushed source carries unescaped by cjson. Each
 * waited answer is byte for byte the `GET` of the run on both gateways (a rolling upgrade, and a
 * rollback: a0565cd2 reading what this release wrote); run lists, sessions and usage byte for byte
 * the same on both gateways, each pending list folded by the other release. And this release's runner
 * stores no stage stamps (`timings`) by default. Fails on a0565cd2 (its runner stores the stamps and
 * pushes `end2`).
 */
import { keys } from '@islet/core';
import type { Cluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { startAppServer } from './helpers.ts';
import {
  call,
  connectApp,
  expectReadAlike,
  expectSessionsAlike,
  hasCommit,
  type MixedReleases,
  OLDER_THAN_9EC25E04,
  pushedEnds,
  startMixed,
  submitWaited,
  tagOf,
} from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_END3_PREVIOUS_RELEASE ?? 'a0565cd2';
const present = hasCommit(PREVIOUS);
const odd = '"q" \\ \\" \u0001\u001f \u2028 \ud800 </script>';

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let app: Awaited<ReturnType<typeof startAppServer>> | undefined;
let connectionId = '';
let messages: string[] = [];
const sessions: Record<'head' | 'prev', string[]> = { head: [], prev: [] };
/** Which release's gateway admitted each session's runs (it writes the create entries). */
const admittedBy = new Map<string, Cluster>();

/** `n` calls of the tool, their answers joined. */
const calls = (n: number) =>
  `let out = []; for (let i = 0; i < ${n}; i++) { const r = await apps.echo_q_script.say_q_script_it({ w: "w" + i }); out.push(r.structuredContent.echo.w) } return out.join()`;
const programs = [
  { code: calls(3), head: 'end3' },
  { code: calls(30), head: 'end3' },
  { code: 'return 1', head: 'end2' },
] as const;

describe.skipIf(!present)(`end3 and a create entry without "o":0 beside ${PREVIOUS}`, () => {
  beforeAll(async () => {
    delete process.env.ISLET_WRITE_FORMAT;
    mixed = await startMixed(PREVIOUS, OLDER_THAN_9EC25E04);
    head = mixed.head;
    prev = mixed.prev;
    messages = mixed.runEvents;
    ({ app, connectionId } = await connectApp(
      head,
      async (d) => ({
        status: 200,
        body: JSON.stringify({ structuredContent: { echo: d.body.arguments ?? {} } }),
      }),
      `Echo ${odd}`,
      [{ name: `say ${odd} it`, inputSchema: { type: 'object' } }],
    ));
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await mixed?.stop();
  });

  async function pair(on: Cluster, other: Cluster, by: 'head' | 'prev', name: string) {
    const sessionId = `e3-${name}`;
    sessions[by].push(sessionId);
    admittedBy.set(sessionId, on);
    for (const [i, p] of programs.entries()) {
      const res = await submitWaited(
        on,
        {
          code: p.code,
          description: `end3 ${name} ${i}`,
          sessionId,
          turnId: 't',
          callId: `c${i}`,
          connections: [connectionId],
        },
        30,
      );
      const body = res.body;
      expect(body.status, res.text).toBe('Completed');
      // This release's runner stores no stage stamps unless asked (ISLET_RUN_STAGE_TIMINGS); a0565cd2's does.
      expect(await mixed!.redis.hexists(keys.run(body.id), 'timings')).toBe(by === 'head' ? 0 : 1);
      const ends = pushedEnds(messages, body.id);
      expect(ends.map(tagOf)).toEqual([by === 'head' ? p.head : 'end2']);
      if (i === 0) {
        // The tenant's strings went into the pushed source unescaped by cjson, and parse back.
        const [, flat] = JSON.parse(ends[0]!.slice(ends[0]!.indexOf(' ', body.id.length + 1) + 1)) as [
          unknown,
          unknown[],
        ];
        const sourceAt = flat.findIndex((v) => typeof v === 'string' && v.startsWith('#s:'));
        const source = flat[sourceAt + 1];
        const parsed = (typeof source === 'string' ? JSON.parse(source) : source) as { name: string };
        expect(parsed.name).toBe(`say ${odd} it`);
      }
      await expectReadAlike(res.text, body.id, [on, other]);
    }
  }

  async function listedAlike(first: Cluster, second: Cluster, by: 'head' | 'prev') {
    const pending = keys.indexPending('dev');
    expect(await mixed!.redis.llen(pending)).toBeGreaterThan(0);
    const entries = (await mixed!.redis.lrange(pending, 0, -1)).map(
      (e) => JSON.parse(e) as Record<string, unknown>,
    );
    const creates = entries.filter((e) => e.t === 'c');
    expect(creates.length).toBe(sessions[by].length * programs.length);
    // A session's first run is not found owned: this release's admission leaves `"o":0` out,
    // a0565cd2's writes it; the later ones are (`"o":1`, both).
    for (const c of creates) {
      const fresh = creates.find((x) => x.s === c.s) === c;
      const ours = admittedBy.get(c.s as string) === head;
      expect(c.o, JSON.stringify(c)).toBe(fresh ? (ours ? undefined : 0) : 1);
    }
    for (const sessionId of sessions[by]) {
      const a = await call(first.url, first.devKey, 'GET', `/v1/runs?sessionId=${sessionId}`);
      expect(a.status, a.text).toBe(200);
      expect(await mixed!.redis.llen(pending)).toBe(0);
      const b = await call(second.url, second.devKey, 'GET', `/v1/runs?sessionId=${sessionId}`);
      expect(b.text).toBe(a.text);
      expect((JSON.parse(a.text) as { items: unknown[] }).items).toHaveLength(programs.length);
    }
  }

  it(`${PREVIOUS}'s gateway and this release's, this release's runner: end3 answered alike, its entries folded by ${PREVIOUS}`, async () => {
    await prev!.killRunner(0, 'SIGTERM');
    await pair(prev!, head!, 'head', 'prev-gw-head-runner');
    await pair(head!, prev!, 'head', 'head-gw-head-runner');
    await listedAlike(prev!, head!, 'head');
  }, 240_000);

  it(`${PREVIOUS}'s runner beside this release's gateway: end2 answered alike, its entries folded by this release`, async () => {
    await prev!.restartRunner(0);
    await head!.killRunner(0, 'SIGTERM');
    await pair(head!, prev!, 'prev', 'head-gw-prev-runner');
    await pair(prev!, head!, 'prev', 'prev-gw-prev-runner');
    await listedAlike(head!, prev!, 'prev');
  }, 240_000);

  it('sessions and usage: both gateways answer the same bytes, every run counted', async () => {
    const listed = await expectSessionsAlike<{ sessionId: string; runs: { Completed: number } }>(
      head!,
      prev!,
    );
    for (const sessionId of [...sessions.head, ...sessions.prev])
      expect(listed.items.find((s) => s.sessionId === sessionId)?.runs).toMatchObject({ Completed: 3 });
  }, 60_000);
});
