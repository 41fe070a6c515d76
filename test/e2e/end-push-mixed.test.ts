/**
 * The pushed end across releases, with real processes (round 41 `push-lean`): this release's
 * gateway and runner beside those of the previous release (`ISLET_PREVIOUS_RELEASE`, default
 * e807b91: its runner pushes the whole record as `<id> end`, its gateway reads only that tag), one
 * Redis, one tenant. This release's runner pushes `<id> end2` without the submit's fields: a gateway
 * of the previous release takes that tag for "the run changed" and reads the run back, so its
 * waited answer is still the run's record. Every pair (gateway × runner, the other runner stopped):
 * each waited answer is byte for byte the `GET` of the run on the gateway that answered it and on
 * the other, for a Completed and a Failed end, and the tag each runner pushed is its release's.
 */
import type { Cluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectReadAlike,
  hasCommit,
  type MixedReleases,
  OLDER_THAN_9EC25E04,
  pushedEnds,
  startMixed,
  submitWaited,
  tagOf,
} from './mixed-releases.ts';

const PREVIOUS = process.env.ISLET_PREVIOUS_RELEASE ?? 'e807b91';
const present = hasCommit(PREVIOUS);

let mixed: MixedReleases | undefined;
let head: Cluster | undefined;
let prev: Cluster | undefined;
let messages: string[] = [];

const programs = [
  { code: 'console.log("hi"); return { n: 6 * 7 }', status: 'Completed' },
  { code: 'console.log("before"); throw new Error("boom")', status: 'Failed' },
] as const;

describe.skipIf(!present)(`the pushed end beside the previous release (${PREVIOUS})`, () => {
  beforeAll(async () => {
    mixed = await startMixed(PREVIOUS, OLDER_THAN_9EC25E04);
    head = mixed.head;
    prev = mixed.prev;
    messages = mixed.runEvents;
  }, 120_000);

  afterAll(async () => {
    await mixed?.stop();
  });

  /** Submits every program with `Prefer: wait` on `on`'s gateway; each run is ended by `by`'s runner. */
  async function pair(on: Cluster, other: Cluster, tag: 'end' | 'end2', name: string) {
    for (const [i, p] of programs.entries()) {
      const res = await submitWaited<{ id: string; status: string; code: string }>(
        on,
        {
          code: p.code,
          description: `mixed ${name} ${i}`,
          sessionId: `mixed-${name}`,
          turnId: 't',
          callId: `c${i}`,
        },
        20,
      );
      const body = res.body;
      expect(body, res.text).toMatchObject({ status: p.status, code: p.code });
      // The end message the runner pushed: its release's tag, and no other for this run.
      expect(pushedEnds(messages, body.id).map(tagOf)).toEqual([tag]);
      await expectReadAlike(res.text, body.id, [on, other]);
    }
  }

  it("the previous release's gateway, this release's runner (lean pushes): its waiters read the run", async () => {
    await prev!.killRunner(0, 'SIGTERM');
    await pair(prev!, head!, 'end2', 'prev-gw-head-runner');
  }, 120_000);

  it("this release's gateway and runner", async () => {
    await pair(head!, prev!, 'end2', 'head-gw-head-runner');
  }, 120_000);

  it("this release's gateway, the previous release's runner (whole pushes): answered from them", async () => {
    await prev!.restartRunner(0);
    await head!.killRunner(0, 'SIGTERM');
    await pair(head!, prev!, 'end', 'head-gw-prev-runner');
  }, 120_000);

  it("the previous release's gateway and runner", async () => {
    await pair(prev!, head!, 'end', 'prev-gw-prev-runner');
  }, 120_000);
});
