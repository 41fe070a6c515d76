// Which functions the submit's, the fetch's and the end's scripts make. Redis runs a script's body
// at every call, so each `local function` in it is made again each time (a closure, with a lookup
// of each enclosing local it reads: `luaF_findupval`, and its closing), whether a line calls it or
// not (test/bench/README.md round 48 `submit-closures`). What each script does on a real server:
// the runner's lease, fair-share and handoff tests, the gateway's admission-ride test.

import { addStandardJob } from 'bullmq/dist/esm/scripts/addStandardJob-9.js';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { describe, expect, it } from 'vitest';
import { BULL_QUIET_PRELUDE, bullQuietPrelude, quietComplete } from './bull-quiet.ts';
import { fetchAndLook, handOffAddScript } from './handoff-scripts.ts';
import { luaSource } from './lua-scripts.ts';

/** How many times `local function <name>(` is in `text`. */
const defined = (text: string, name: string) => text.split(`local function ${name}(`).length - 1;

describe('the functions a script makes at every call', () => {
  it("makes none inside the lease's acquire (its helpers written where they are used)", () => {
    for (const name of ['lease-acquire-6']) {
      const source = luaSource(name);
      const body = source.slice(source.indexOf('local function acquireLease('));
      expect(body).toMatch(/^local function acquireLease\(/);
      // The function itself, and nothing nested after it (the includes' helpers precede it).
      expect(body.match(/\bfunction\b/g)).toHaveLength(1);
    }
  });

  it("makes no key helper in the fused fetch's start: the run's and tenant's keys written out", () => {
    const source = luaSource('fetch-lease-begin-11', {
      DEFER: 'nil',
      START: 'ARGV',
      FETCHED_ARGS: 24,
      POOL_NOW: 'nil',
      UNCOUNTED: 'nil',
      KNOWN_RUN: 'nil',
      KNOWN_JOB: 'nil',
      KNOWN_TENANT: 'nil',
      POOL_SEEN: 'nil',
      REFETCH: 'fetchJob',
    });
    expect(defined(source, 'key')).toBe(0);
    expect(source).toContain('A[o + 5] .. tenant .. A[o + 6]');
    expect(source).toContain('A[o + 13] .. runId .. A[o + 14]');
  });

  it("leaves out of the hand-off's add and a fetch the prelude's helpers they never call", () => {
    const add = handOffAddScript(addStandardJob.content, moveToActive.content).source;
    const fetch = fetchAndLook(moveToActive.content);
    for (const text of [add, fetch]) {
      // A completion's (the end's script has them) and the absent keys' answers (a table, made in place).
      for (const name of ['bullProbe', 'bullKeepLock', 'bullAttempts', 'bullEmpty'])
        expect(defined(text, name)).toBe(0);
      // The job's start made once, inside the function that runs BullMQ's fetch: the hand-off's
      // direct fetch (and a submit with no worker idle) makes none.
      expect(defined(text, 'bullStartJob')).toBe(1);
      expect(text.indexOf('local function bullStartJob(')).toBeGreaterThan(
        text.indexOf('local function bullFetch()'),
      );
    }
    // The end's completion calls each of them: its prelude keeps them, once each.
    const end = quietComplete(moveToFinished.content);
    for (const name of ['bullProbe', 'bullKeepLock', 'bullAttempts', 'bullStartJob'])
      expect(defined(end, name)).toBe(1);
    expect(end).toContain(BULL_QUIET_PRELUDE);
  });

  it("makes the hand-off's BullMQ fetch, `marked` and `unpropagated` only past the answers that need none (round 52 `submit-lean`)", () => {
    const add = handOffAddScript(addStandardJob.content, moveToActive.content).source;
    // BullMQ's fetch made only when the direct fetch answers none.
    expect(add).toContain(
      'local fetched = handedFetch(KEYS, ARGV)\nif not fetched then\nlocal function bullFetch()',
    );
    expect(defined(add, 'bullFetch')).toBe(1);
    // An add with no worker idle returns before either is made.
    const idleReturn = add.indexOf('if idleSeen == false then return added end');
    expect(idleReturn).toBeGreaterThan(0);
    for (const name of ['marked', 'unpropagated']) {
      expect(defined(add, name)).toBe(1);
      expect(add.indexOf(`local function ${name}(`)).toBeGreaterThan(idleReturn);
    }
    // The attempt's start keeps the record's three values in locals, not a table.
    expect(luaSource('lease-and-begin-9')).not.toContain('{run[stAt], run[countAt], run[timeAt]}');
    // The hand-off's uncounted note made with its `decided`; the prelude's notes with their fields.
    expect(add).toContain('uncounted = {job = added, decided = false}');
    expect(BULL_QUIET_PRELUDE).toMatch(/^local bullQ = \{absent = \{\}, events = false, .*known = false/);
  });

  it("makes the lease's pool helpers only inside `poolPlace`, called on the paths that use them (round 52 `submit-lean`)", () => {
    for (const name of ['lease-acquire-6', 'lease-and-begin-9']) {
      const source = luaSource(name);
      const place = source.indexOf('local function poolPlace()');
      const acquire = source.indexOf('local function acquireLease(');
      expect(place).toBeGreaterThanOrEqual(0);
      for (const helper of ['poolQuota', 'reservedKey', 'keepPlace', 'putBack', 'putBackLapsed']) {
        expect(defined(source, helper)).toBe(1);
        const at = source.indexOf(`local function ${helper}(`);
        expect(at > place && at < acquire).toBe(true);
      }
      // The share read only where the quota is; a cap of '0' read without `tonumber`.
      const body = source.slice(acquire);
      expect(body).toContain("if cap == '0' then cap = 0 else cap = tonumber(cap) end");
      expect(body).not.toContain('local share');
    }
  });

  it('gives a text calling every helper the whole prelude, in the same order', () => {
    expect(bullQuietPrelude('bullProbe() bullKeepLock() bullAttempts() bullStartJob()')).toBe(
      BULL_QUIET_PRELUDE,
    );
    const bare = bullQuietPrelude('return 1');
    expect(bare).toContain('local function bullCall(');
    expect(bare).toContain('local bullRedis = setmetatable');
    expect(defined(bare, 'bullStartJob')).toBe(0);
  });
});
