// The submit's composite script with its queue's names in its text (`bakedAddScript`): which
// names go in, which variants are made, and when the keys go as arguments instead. What the
// script does on a real server: gateway admission-ride.test.ts and the runner's handoff tests.

import { LuaScript } from '@islet/core/lua-script';
import { describe, expect, it } from 'vitest';
import { admittedAddScript, bakedAddScript, RECORD_FIELDS } from './admitted-add.ts';
import { ADMITTED_DATA, ADMITTED_TENANT, CREATED_RUN, QUEUED_COUNT } from './handoff-scripts.ts';

/** An add that takes the count and may start the created run, as the hand-off's add does. */
const add = () => new LuaScript(`local c, r = ${QUEUED_COUNT}, ${CREATED_RUN}\nreturn KEYS[1]`);
const queueKeys = (q: string) => ['wait', 'paused', 'meta', 'idle'].map((s) => `islet:{runs-${q}}:${s}`);

describe("the submit's script with its queue's names in its text", () => {
  it('writes the add keys and the queued-count key as literals, the counts and the copies of KEYS and ARGV gone', () => {
    const a = add();
    const keys = queueKeys('read-only');
    const baked = bakedAddScript(a, { keys, queued: 'islet:{pool:read-only}:queued', addArgs: 3 });
    expect(baked).toBeDefined();
    const source = baked?.source ?? '';
    for (const k of keys) expect(source).toContain(`'${k}'`);
    expect(source).toContain("admittedCount = {'islet:{pool:read-only}:queued', ARGV[16]}");
    expect(source).toContain('local na = #ARGV - 3');
    // KEYS and ARGV the script's locals, read by the admission's helpers through its one upvalue each.
    expect(source).toContain('local KEYS, ARGV = KEYS, ARGV\nlocal function admit()\n');
    expect(source).toContain('local answer, createdRun = admit()');
    // The arguments' form (a0565cd2's, still there for what cannot be baked) copies both.
    const unbaked = admittedAddScript(a).source;
    expect(unbaked).toContain('local AA = {unpack(ARGV, 4, 3 + na)}');
    expect(source).not.toContain('unpack(KEYS, 1, nk)');
    expect(source).not.toContain('unpack(KEYS, first, #KEYS)');
    expect(source).not.toContain('local AA = ');
    expect(baked?.sha).not.toBe(admittedAddScript(a).sha);
  });

  it("vouches for the add's data as the run's format-2 data of ARGV[16] only in its own variant (round 51 `submit-lua`)", () => {
    const a = new LuaScript(`local d, t = ${ADMITTED_DATA}, ${ADMITTED_TENANT}\nreturn KEYS[1]`);
    const keys = queueKeys('v');
    const vouched = bakedAddScript(a, { keys, queued: 'q:v', addArgs: 8, formatTwo: true });
    const plain = bakedAddScript(a, { keys, queued: 'q:v', addArgs: 8 });
    expect(vouched).not.toBe(plain);
    expect(bakedAddScript(a, { keys, queued: 'q:v', addArgs: 8, formatTwo: true })).toBe(vouched);
    expect(vouched?.source).toContain('local admittedData, admittedTenant = AD[2], ARGV[16]');
    expect(vouched?.source).toContain('local d, t = admittedData, admittedTenant');
    expect(plain?.source).toContain('local d, t = nil, nil');
    expect(plain?.source).not.toContain('admittedData');
    // The arguments' form (no variant) never vouches.
    expect(admittedAddScript(a).source).toContain('local d, t = nil, nil');
  });

  it('makes one script a queue: the same for the same names (one array or two), another for another queue or count', () => {
    const a = add();
    const keys = queueKeys('x');
    const one = bakedAddScript(a, { keys, queued: 'q:x', addArgs: 3 });
    expect(bakedAddScript(a, { keys, queued: 'q:x', addArgs: 3 })).toBe(one);
    expect(bakedAddScript(a, { keys: [...keys], queued: 'q:x', addArgs: 3 })).toBe(one);
    const uncounted = bakedAddScript(a, { keys, queued: undefined, addArgs: 3 });
    expect(uncounted).not.toBe(one);
    expect(uncounted?.source).not.toContain('admittedCount = {');
    expect(bakedAddScript(a, { keys, queued: 'q:x', addArgs: 4 })).not.toBe(one);
    expect(bakedAddScript(a, { keys: queueKeys('y'), queued: 'q:y', addArgs: 3 })).not.toBe(one);
    // The scripts of another add are its own.
    expect(bakedAddScript(add(), { keys, queued: 'q:x', addArgs: 3 })).not.toBe(one);
  });

  it('sends the keys as arguments for a name a Lua literal would not hold as it is, and past 32 variants of an add', () => {
    const a = add();
    for (const odd of ["it's", 'back\\slash', 'new\nline', 'tab\there', 'é']) {
      expect(bakedAddScript(a, { keys: [odd], queued: 'q', addArgs: 3 })).toBeUndefined();
      expect(bakedAddScript(a, { keys: ['k'], queued: odd, addArgs: 3 })).toBeUndefined();
    }
    const first = bakedAddScript(a, { keys: queueKeys('0'), queued: 'q', addArgs: 3 });
    for (let i = 1; i < 32; i++)
      expect(bakedAddScript(a, { keys: queueKeys(`${i}`), queued: 'q', addArgs: 3 })).toBeDefined();
    expect(bakedAddScript(a, { keys: queueKeys('32'), queued: 'q', addArgs: 3 })).toBeUndefined();
    // One made already is still found.
    expect(bakedAddScript(a, { keys: queueKeys('0'), queued: 'q', addArgs: 3 })).toBe(first);
  });

  it("writes the created record's field names into the text (one constructor of names and values), one script a layout", () => {
    const a = add();
    const keys = queueKeys('f');
    const layout = (names: string[]) => ({ names, id: names.join(',') });
    const plain = bakedAddScript(a, { keys, queued: 'q:f', addArgs: 3 });
    expect(plain?.source).toContain(`local fields = ${RECORD_FIELDS}`);
    const named = bakedAddScript(a, {
      keys,
      queued: 'q:f',
      addArgs: 3,
      fields: layout(['id', 'tenant', 'pushEnd']),
    });
    expect(named?.source).not.toContain(RECORD_FIELDS);
    expect(named?.source).toContain(
      "local fields = {'id', ARGV[a + 4], 'tenant', ARGV[a + 5], 'pushEnd', ARGV[a + 6]}",
    );
    expect(named).not.toBe(plain);
    // The same layout (another array of the same names): the same script; another layout: its own.
    expect(
      bakedAddScript(a, { keys, queued: 'q:f', addArgs: 3, fields: layout(['id', 'tenant', 'pushEnd']) }),
    ).toBe(named);
    const other = bakedAddScript(a, { keys, queued: 'q:f', addArgs: 3, fields: layout(['id', 'tenant']) });
    expect(other).not.toBe(named);
    expect(other?.source).toContain("local fields = {'id', ARGV[a + 4], 'tenant', ARGV[a + 5]}");
    // Alternating layouts find each its own again.
    expect(
      bakedAddScript(a, { keys, queued: 'q:f', addArgs: 3, fields: layout(['id', 'tenant', 'pushEnd']) }),
    ).toBe(named);
    // A name a literal would not hold: not baked (the caller sends names and values as arguments).
    expect(bakedAddScript(a, { keys, queued: 'q:f', addArgs: 3, fields: layout(["it's"]) })).toBeUndefined();
  });
});
