import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { LEASE_ACQUIRE, LEASE_RELEASE } from './lease-scripts.ts';
import { compactLua, luaSource } from './lua-scripts.ts';
import { INDEX_CREATE_PARAMS } from './run-index-scripts.ts';
import * as runStoreScripts from './run-store-scripts.ts';

const dir = new URL('./lua/', import.meta.url);
const scripts = readdirSync(dir).filter((f) => f.endsWith('.lua'));

describe('the run package Lua scripts', () => {
  it('each is named with its key count and its header names its highest key and ARGV', () => {
    expect(scripts.length).toBeGreaterThan(10);
    for (const file of scripts) {
      const count = Number(/-(\d+)\.lua$/.exec(file)?.[1]);
      expect(count, file).toBeGreaterThan(0);
      const header = readFileSync(new URL(file, dir), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('--'))
        .join('\n');
      expect(header, file).toContain(`KEYS[${count}]`);
      expect(header, file).toContain('ARGV');
    }
  });

  it('inlines each include once and refuses a missing or unused parameter', () => {
    const source = luaSource('admit-and-create-24', {
      COUNT_IN_WINDOW: '    local counted = 1',
      OWNER_FRESH: '60',
      ...INDEX_CREATE_PARAMS,
    });
    expect(source).not.toContain('@include');
    expect(source.match(/local function inFlight\(/g)).toHaveLength(1);
    // index-create includes the feed; the feed's function is still defined once.
    expect(source.match(/local function feedAppend\(/g)).toHaveLength(1);
    expect(() => luaSource('admit-and-create-24')).toThrow('no value for $' + '{COUNT_IN_WINDOW}');
    expect(() => luaSource('create-run-2', { EXTRA: 1 })).toThrow('parameter EXTRA is not used');
  });

  it('sends each script compacted (no comment lines, no indentation), hashed as sent, and Redis compiles it', async () => {
    const raw = 'local a = 1\n  -- why\n\n  if a then\n    return a -- kept: not a whole line\n  end\n';
    expect(compactLua(raw)).toBe('local a = 1\nif a then\nreturn a -- kept: not a whole line\nend');
    // The module's scripts (it also exports `finishRunReleaseSource`, a text for the composites).
    const scripts = [
      ...Object.values(runStoreScripts).filter((v): v is LuaScript => v instanceof LuaScript),
      LEASE_ACQUIRE,
      LEASE_RELEASE,
    ];
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      for (const script of scripts) {
        expect(script.source).not.toMatch(/^\s*--/m);
        expect(script.source).not.toMatch(/^\s/m);
        expect(script.sha).toBe(createHash('sha1').update(script.source).digest('hex'));
        expect(await redis.script('LOAD', script.source)).toBe(script.sha);
      }
      // The admission's EVAL (its NOSCRIPT retry sends the source, KBs longer with its comments) is
      // one of the scripts checked above: sent without comment lines or indentation.
      expect(scripts).toContain(runStoreScripts.ADMIT_AND_CREATE);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
