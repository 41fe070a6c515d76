/**
 * A Completed run's end without `kind none` across releases, with real processes (test/bench/README.md
 * round 42 `format-next`): this release's runner (format 2, the default) stores no `kind` in the
 * record and no `"k"` in the end entry; d92635a's runner still stores `kind none` and `"k":"none"`.
 * Both releases' gateways and runners on one Redis, one tenant, every pair (gateway × runner, the
 * other runner stopped): a Completed run (with and without output) and a Failed one. Each waited
 * answer is byte for byte the `GET` of the run on both gateways (a rolling upgrade, and a rollback:
 * d92635a reading this release's records); the run list, sessions and usage answered byte for byte
 * the same by both gateways, with `kind: "none"` for every Completed run whichever runner ended it;
 * the pending list holding this release's kind-less entries folded by d92635a's own fold
 * (includes/index-fold.lua as that release sends it), and d92635a's by this release's. Fails on
 * d92635a (its runner writes `kind none`: the first assertion on the record).
 */
import { keys } from '@islet/core';
import type { Cluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
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

const PREVIOUS = process.env.ISLET_KIND_PREVIOUS_RELEASE ?? 'd92635a';
const present = hasCommit(PREVIOUS);

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let messages: string[] = [];
/** The sessions each pair's runs went to, by the runner's release. */
const sessions: Record<'head' | 'prev', string[]> = { head: [], prev: [] };

const programs = [
  { code: 'console.log("hi"); return { n: 6 * 7 }', status: 'Completed', kind: 'none' },
  { code: 'let x = 1', status: 'Completed', kind: 'none' },
  { code: 'console.log("before"); throw new Error("boom")', status: 'Failed', kind: 'exception' },
] as const;

/** The pushed end's record (`<id> end2 [record, journal]`) as an object. */
function pushedRecord(message: string): Record<string, string> {
  const [flat] = JSON.parse(message.slice(message.indexOf(' end2 ') + 6)) as [string[] | object];
  const out: Record<string, string> = {};
  if (Array.isArray(flat)) for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

describe.skipIf(!present)(`a Completed run's end without \`kind none\` beside ${PREVIOUS}`, () => {
  beforeAll(async () => {
    delete process.env.ISLET_WRITE_FORMAT;
    mixed = await startMixed(PREVIOUS, OLDER_THAN_9EC25E04);
    head = mixed.head;
    prev = mixed.prev;
    messages = mixed.runEvents;
  }, 180_000);

  afterAll(async () => {
    await mixed?.stop();
  });

  /** Submits every program with `Prefer: wait` on `on`'s gateway; each run ended by `by`'s runner. */
  async function pair(on: Cluster, other: Cluster, by: 'head' | 'prev', name: string) {
    const sessionId = `kn-${name}`;
    sessions[by].push(sessionId);
    for (const [i, p] of programs.entries()) {
      const res = await submitWaited(
        on,
        { code: p.code, description: `kind ${name} ${i}`, sessionId, turnId: 't', callId: `c${i}` },
        20,
      );
      const body = res.body;
      expect(body.status, res.text).toBe(p.status);
      // What the runner stored and pushed: this release leaves a Completed run's `none` out.
      const stored = p.status === 'Completed' && by === 'head' ? null : p.kind;
      expect(await mixed!.redis.hget(keys.run(body.id), 'kind')).toBe(stored);
      const ends = pushedEnds(messages, body.id);
      expect(ends.map(tagOf)).toEqual(['end2']);
      expect(pushedRecord(ends[0]!).kind).toBe(stored ?? undefined);
      // Answered alike by both releases, from the push or from the record.
      await expectReadAlike(res.text, body.id, [on, other]);
    }
  }

  /** Lists `by`'s sessions on `first` (whose fold applies the pending ends), then on `second`. */
  async function listedAlike(first: Cluster, second: Cluster, by: 'head' | 'prev') {
    const pending = keys.indexPending('dev');
    expect(await mixed!.redis.llen(pending)).toBeGreaterThan(0);
    for (const sessionId of sessions[by]) {
      const a = await call(first.url, first.devKey, 'GET', `/v1/runs?sessionId=${sessionId}`);
      expect(a.status, a.text).toBe(200);
      // Folded by `first`'s release, every end of it.
      expect(await mixed!.redis.llen(pending)).toBe(0);
      const b = await call(second.url, second.devKey, 'GET', `/v1/runs?sessionId=${sessionId}`);
      expect(b.text).toBe(a.text);
      const items = (
        JSON.parse(a.text) as { items: { status: string; kind?: string; description: string }[] }
      ).items;
      expect(
        items
          .map((r) => [r.description.slice(-1), r.status, r.kind])
          .sort((x, y) => x[0]!.localeCompare(y[0]!)),
      ).toEqual(programs.map((p, i) => [String(i), p.status, p.kind]));
    }
  }

  it("d92635a's gateway, this release's runner: stored without `kind none`, answered and folded by d92635a", async () => {
    await prev!.killRunner(0, 'SIGTERM');
    await pair(prev!, head!, 'head', 'prev-gw-head-runner');
    await pair(head!, prev!, 'head', 'head-gw-head-runner');
    // A rollback's reader: d92635a's fold applies this release's kind-less entries.
    await listedAlike(prev!, head!, 'head');
  }, 180_000);

  it("d92635a's runner (`kind none` stored) beside this release's gateway: answered and folded by this release", async () => {
    await prev!.restartRunner(0);
    await head!.killRunner(0, 'SIGTERM');
    await pair(head!, prev!, 'prev', 'head-gw-prev-runner');
    await pair(prev!, head!, 'prev', 'prev-gw-prev-runner');
    await listedAlike(head!, prev!, 'prev');
  }, 180_000);

  it('sessions and usage: both gateways answer the same bytes, every run counted', async () => {
    const listed = await expectSessionsAlike<{
      sessionId: string;
      runs: { Completed: number; Failed: number };
    }>(head!, prev!);
    for (const sessionId of [...sessions.head, ...sessions.prev])
      expect(listed.items.find((s) => s.sessionId === sessionId)?.runs).toMatchObject({
        Completed: 2,
        Failed: 1,
      });
  }, 60_000);
});
