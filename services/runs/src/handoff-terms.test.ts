/**
 * A registration's two forms read by the hand-off's Lua (handoff-terms.ts): the compact form's
 * branch, its fixed names baked in, makes the very fetch keys, options and start arguments the
 * full form's terms give (the full form's reading as handoff-scripts.ts does it: its keys, and
 * `{prefix, now, options, startArgs}` with the time last); an unbaked branch never takes a compact
 * registration, nor a baked one another layout's. Real redis-server running the branch's text.
 */
import { channels, keys } from '@islet/core';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { fetchedStartArgs } from './fetched-start-args.ts';
import {
  bakeFixedTerms,
  compactTermsBranch,
  compactTermsOf,
  HAND_OFF_FETCH_KEYS,
  handOffFixedTerms,
  luaLiteral,
} from './handoff-terms.ts';
import { journalKeys } from './keys.ts';

const r = useSuiteRedis();

const mode = 'read-only';
const prefix = 'islet:{runs-read-only}:';
const queueKeys: Record<string, string> = { '': prefix };
for (const k of HAND_OFF_FETCH_KEYS) queueKeys[k] = `${prefix}${k}`;

/** A worker's full terms as a runner makes them, every carried value distinct. */
function fullTerms(token: string) {
  const startArgs = fetchedStartArgs({
    mode,
    share: 0.25,
    cap: 3,
    leaseMs: 31_000,
    ttlSeconds: 604_800,
    nowMs: 1_796_584_541_215,
    journalKey: journalKeys().journal,
    runKey: keys.run,
    start: (runId) => ({
      streamKey: keys.runEvents(runId),
      maxLen: 2000,
      type: 'status',
      sealedData: 'v1.dev1.CNMnO5JlQg1JjRGC.7hFwiB1g3qA8H2e-VBZgbA.F0aiENa0rRP3QShoqkpgTnp7XtQ',
      channel: channels.runProgress,
      message: `${runId} running`,
    }),
  });
  return {
    keys: HAND_OFF_FETCH_KEYS.map((k) => `${prefix}${k}`),
    prefix,
    token,
    lockDuration: 25_000,
    name: 'vm',
    startArgs,
    handOff: `${prefix}handoff:w1`,
  };
}

/** The branch alone in a script: what it makes of ARGV[1] (nil when not taken). */
function reader(baked: boolean, fixed = handOffFixedTerms(queueKeys, mode)): string {
  const branch = `local ok, terms = pcall(cjson.decode, ARGV[1])
local nowText = '1796584600000'
local token, fetchKeys, handOff, opts, FA
if false then
${compactTermsBranch("''")}
else
  return nil
end
return {token, handOff, fetchKeys, FA, tostring(opts.lockDuration), opts.name or ''}`;
  return baked ? bakeFixedTerms(branch, fixed, luaLiteral) : branch;
}

describe("a registration's compact form", () => {
  it("is read into the fetch keys, options and start arguments the full form gives (the time the hand-off's)", async () => {
    const full = fullTerms('w1:h:7');
    const [head, tail] = compactTermsOf(handOffFixedTerms(queueKeys, mode), full) ?? ['', ''];
    const text = head + JSON.stringify(full.token) + tail;
    expect(JSON.parse(text)).toHaveLength(11);
    // No name of the mode's in it: no queue key, no pool key, no key part.
    expect(text).not.toContain(`${prefix}wait`);
    expect(text).not.toContain('{pool:');
    expect(text).not.toContain('islet:journal:');
    const got = await r.a.eval(reader(true), 0, text);
    // The full form's reading: its keys; FA = {prefix, now, options, startArgs with the time last},
    // but for the journal's expiry (begin-attempt's TTL argument, unread since round 46): empty.
    const start = full.startArgs.slice(0, -1).map(String);
    expect(start[17]).toBe('604800');
    start[17] = '';
    expect(got).toEqual([
      full.token,
      full.handOff,
      full.keys,
      [prefix, '1796584600000', '', ...start, '1796584600000'],
      '25000',
      'vm',
    ]);
  });

  it('is not taken by an unbaked script, nor by one baked with other names (another id)', async () => {
    const full = fullTerms('w1:h:8');
    const [head, tail] = compactTermsOf(handOffFixedTerms(queueKeys, mode), full) ?? ['', ''];
    const text = head + JSON.stringify(full.token) + tail;
    expect(await r.a.eval(reader(false), 0, text)).toBeNull();
    const other: Record<string, string> = { '': 'islet:{runs-other}:' };
    for (const k of HAND_OFF_FETCH_KEYS) other[k] = `islet:{runs-other}:${k}`;
    expect(await r.a.eval(reader(true, handOffFixedTerms(other, mode)), 0, text)).toBeNull();
  });

  it("is not written for terms whose names are not the mode's (the full form then)", () => {
    const fixed = handOffFixedTerms(queueKeys, mode);
    const full = fullTerms('w1:h:9');
    expect(compactTermsOf(fixed, full)).toBeDefined();
    expect(compactTermsOf(fixed, { ...full, prefix: 'islet:{runs-x}:' })).toBeUndefined();
    const startArgs = full.startArgs.slice();
    startArgs[8] = 'islet:journal2:{';
    expect(compactTermsOf(fixed, { ...full, startArgs })).toBeUndefined();
    expect(compactTermsOf(fixed, { ...full, startArgs: startArgs.slice(1) })).toBeUndefined();
  });

  it('bakes a name outside printable ASCII, a quote or a backslash as an escape Lua reads back', async () => {
    const name = "a'b\\c\u00e9\n";
    expect(await r.a.eval(`return ${luaLiteral(name)}`, 0)).toBe(name);
  });
});
