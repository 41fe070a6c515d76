import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { luaSource } from './lua-scripts.ts';
import { INDEX_CREATE_PARAMS } from './run-index-scripts.ts';

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
    const source = luaSource('admit-and-create-15', {
      COUNT_IN_WINDOW: '    local counted = 1',
      ...INDEX_CREATE_PARAMS,
    });
    expect(source).not.toContain('@include');
    expect(source.match(/local function inFlight\(/g)).toHaveLength(1);
    // index-create includes the feed; the feed's function is still defined once.
    expect(source.match(/local function feedAppend\(/g)).toHaveLength(1);
    expect(() => luaSource('admit-and-create-15')).toThrow('no value for $' + '{COUNT_IN_WINDOW}');
    expect(() => luaSource('create-run-2', { EXTRA: 1 })).toThrow('parameter EXTRA is not used');
  });
});
