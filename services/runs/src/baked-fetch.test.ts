/**
 * The fused fetch baked with its names (baked-fetch.ts): the header makes the very KEYS and ARGV
 * the unbaked script is given, so the rest of the text reads the same; the call carries no key and
 * only the arguments that differ; another layout's names get their own variant; a call not of the
 * fused fetch's shape, or past MAX_BAKED variants, is not baked (sent as before). Real
 * redis-server running the scripts; the runner's fetch with its writes is in the runner's
 * baked-fetch.test.ts.
 */

import { LuaScript } from '@islet/core/lua-script';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { bakedFetchCall, isBakedFetchSha } from './baked-fetch.ts';
import { FETCHED_ARGS } from './fetched-start-args.ts';

const r = useSuiteRedis();

/** What the fused script's text sees: its KEYS, its ARGV once the delay is taken off, the delay. */
const probe = () =>
  new LuaScript(`local deferMs = tonumber(table.remove(ARGV))
return {KEYS, ARGV, deferMs, #ARGV}`);

/** A fused fetch's call: 11 keys; prefix, time, options; the start's 24; the delay. */
function call(prefix: string) {
  const keys = Array.from({ length: 11 }, (_, i) => `${prefix}k${i}`);
  const start: (string | number)[] = [
    '{pool:read-only}:slots',
    '{pool:read-only}:busy',
    '{pool:read-only}:queued',
    '{pool:read-only}:waiting',
    '{pool:read-only}:t:{',
    "}:leases'q\\",
    '{pool:read-only}:t:{',
    '}:deferred',
    'islet:journal:{',
    '}',
    'islet:run:{',
    '}',
    'islet:run:{',
    '}:events',
    0.25,
    3,
    31_000,
    604_800,
    2000,
    'status',
    'v1.dev1.sealed\u00e9',
    'islet:run-progress',
    ' running',
    1_796_584_541_215,
  ];
  expect(start).toHaveLength(FETCHED_ARGS);
  const args: (string | number | Buffer)[] = [
    prefix,
    1_796_584_541_200,
    Buffer.from([0x82, 0xa1, 0x00, 0xff]),
  ];
  return { keys, args: args.concat(start, 25) };
}

describe("the fused fetch's baked call", () => {
  it('gives its text the very KEYS and ARGV the unbaked call does, carrying no key and 10 arguments', async () => {
    const base = probe();
    const { keys, args } = call('islet:{runs-read-only}:');
    const baked = bakedFetchCall(base, keys, args);
    expect(baked).toBeDefined();
    if (!baked) return;
    expect(isBakedFetchSha(baked.script.sha)).toBe(true);
    expect(isBakedFetchSha(base.sha)).toBe(false);
    // BullMQ's time and options, share, cap, lease ms, ttl, maxLen, sealed event, start time, delay.
    expect(baked.args).toHaveLength(10);
    expect(baked.args.some((a) => typeof a === 'string' && a.includes('{pool:'))).toBe(false);
    const asSent = await base.run(r.a, keys, args as (string | number)[]);
    const asBaked = await baked.script.run(r.a, [], baked.args as (string | number)[]);
    expect(asBaked).toEqual(asSent);
    expect((asSent as unknown[])[3]).toBe(3 + FETCHED_ARGS);
  });

  it("bakes another layout's names in a variant of its own, and finds a mode's again", () => {
    const base = probe();
    const a = call('islet:{runs-a}:');
    const b = call('islet:{runs-b}:');
    const first = bakedFetchCall(base, a.keys, a.args)?.script;
    const other = bakedFetchCall(base, b.keys, b.args)?.script;
    expect(other?.sha).not.toBe(first?.sha);
    expect(bakedFetchCall(base, a.keys, a.args)?.script).toBe(first);
    expect(other?.source).toContain("'islet:{runs-b}:k0'");
  });

  it("sends a call not of the fused fetch's shape, or past 16 variants, unbaked", () => {
    const base = probe();
    const { keys, args } = call('islet:{runs-c}:');
    expect(bakedFetchCall(base, keys.slice(1), args)).toBeUndefined();
    expect(bakedFetchCall(base, keys, args.slice(1))).toBeUndefined();
    const numbered = args.slice();
    numbered[3] = 7;
    expect(bakedFetchCall(base, keys, numbered)).toBeUndefined();
    for (let i = 0; i < 16; i++) {
      const v = call(`islet:{runs-v${i}}:`);
      expect(bakedFetchCall(base, v.keys, v.args)).toBeDefined();
    }
    const past = call('islet:{runs-past}:');
    expect(bakedFetchCall(base, past.keys, past.args)).toBeUndefined();
    // One of the 16 still is.
    const known = call('islet:{runs-v3}:');
    expect(bakedFetchCall(base, known.keys, known.args)).toBeDefined();
  });
});
