import { createHash } from 'node:crypto';
import v8 from 'node:v8';
import { startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { LuaScript } from './lua-script.ts';
import { createRedis } from './redis.ts';
import { createSealer, generateSealKey, parseSealKeys, sealerFromConfig } from './sealer.ts';
import { createSettingsStore } from './settings-store.ts';
import { hashApiKey } from './tenant-store.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

describe('loadConfig', () => {
  it('applies defaults and parses lists', () => {
    const c = loadConfig({ ...base, ISLET_RUNNER_MODES: 'read-only, workspace-write', ISLET_PORT: '9000' });
    expect(c.ISLET_PORT).toBe(9000);
    expect(c.ISLET_RUNNER_MODES).toEqual(['read-only', 'workspace-write']);
    expect(c.ISLET_RUNNER_CONCURRENCY).toBe(4);
  });
  it('writes format 2 by default; 1 stays selectable (an upgrade from a release older than e807b91), nothing else', () => {
    expect(loadConfig(base).ISLET_WRITE_FORMAT).toBe('2');
    expect(loadConfig({ ...base, ISLET_WRITE_FORMAT: '1' }).ISLET_WRITE_FORMAT).toBe('1');
    expect(() => loadConfig({ ...base, ISLET_WRITE_FORMAT: '3' })).toThrow(/ISLET_WRITE_FORMAT/);
  });
  it('lists every problem', () => {
    expect(() => loadConfig({ ISLET_RUNNER_MODES: 'nope' })).toThrow(
      /ISLET_SEAL_KEYS[\s\S]*ISLET_INTERNAL_TOKEN/,
    );
  });
});

describe('logger', () => {
  it('redacts credentials and key material', () => {
    const lines: string[] = [];
    const log = createLogger({ name: 't', destination: { write: (s: string) => lines.push(s) } });
    log.info(
      {
        req: { headers: { authorization: 'Bearer isk_secret' } },
        apiKey: 'isk_x',
        config: { ISLET_SEAL_KEYS: 'k1:AAAA', ISLET_INTERNAL_TOKEN: 'tok' },
      },
      'hello',
    );
    const out = lines.join('');
    expect(out).toContain('hello');
    for (const secret of ['isk_secret', 'isk_x', 'k1:AAAA', '"tok"']) expect(out).not.toContain(secret);
    expect(out).toContain('[redacted]');
  });
});

describe('sealer', () => {
  it('round-trips, names the key id, and rejects tampering', () => {
    const s = sealerFromConfig(base);
    const sealed = s.seal('hello 🌍');
    expect(sealed).toMatch(/^v1\.k1\./);
    expect(sealed).not.toContain('hello');
    expect(s.open(sealed)).toBe('hello 🌍');
    const parts = sealed.split('.');
    parts[4] = Buffer.from('tampered').toString('base64url');
    expect(() => s.open(parts.join('.'))).toThrow(/authentication/);
  });
  it('never repeats an IV across pool refills (IVs come from one CSPRNG buffer)', () => {
    const s = sealerFromConfig(base);
    // 512 IVs per refill: 3000 seals cross five refills.
    const ivs = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const sealed = s.seal(`value ${i}`);
      const iv = sealed.split('.')[2]!;
      expect(Buffer.from(iv, 'base64url')).toHaveLength(12);
      ivs.add(iv);
      expect(s.open(sealed)).toBe(`value ${i}`);
    }
    expect(ivs.size).toBe(3000);
    // Two sealers (two processes' worth) draw independent IVs.
    const other = sealerFromConfig(base);
    for (let i = 0; i < 600; i++) expect(ivs.has(other.seal('x').split('.')[2]!)).toBe(false);
  });
  it('keeps old records readable after rotation', () => {
    const keys = parseSealKeys(`${generateSealKey('old')},${generateSealKey('new')}`);
    const before = createSealer({ keys, activeKeyId: 'old' }).seal('secret');
    const after = createSealer({ keys, activeKeyId: 'new' });
    expect(after.seal('x')).toMatch(/^v1\.new\./);
    expect(after.open(before)).toBe('secret');
    const { old: _dropped, ...onlyNew } = keys;
    expect(() => createSealer({ keys: onlyNew, activeKeyId: 'new' }).open(before)).toThrow(
      /no seal key "old"/,
    );
  });
});

describe('hashApiKey', () => {
  it("is the key's SHA-256 in hex, as the stored identities are named", () => {
    for (const key of ['isk_abc', 'dev-key', 'ключ-ü', 'x'.repeat(300)])
      expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
  });
});

describe('LuaScript', () => {
  // V8's serializer tags a string by how it holds it: '"' one byte a character, 'c' two.
  const held = (text: string) => String.fromCharCode(v8.serialize(text)[2] ?? 0);
  it('holds an ASCII source as one-byte text (a two-byte file read compacted to ASCII), same text and hash', () => {
    const read = ['-- a comment — with a dash', "return redis.call('GET', KEYS[1])"].join('\n');
    const compacted = read
      .split('\n')
      .filter((line) => !line.startsWith('--'))
      .join('\n');
    expect(held(compacted)).toBe('c');
    const script = new LuaScript(compacted);
    expect(script.source).toBe(compacted);
    expect(held(script.source)).toBe('"');
    expect(script.sha).toBe(createHash('sha1').update(compacted).digest('hex'));
  });
  it('keeps a source with non-ASCII text as it is', () => {
    const source = "return 'é — ok'";
    const script = new LuaScript(source);
    expect(script.source).toBe(source);
    expect(script.sha).toBe(createHash('sha1').update(source).digest('hex'));
  });
});

describe('stores on a real redis', () => {
  it('settings compare-and-set', async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      const settings = createSettingsStore(redis);
      const s0 = await settings.get();
      const ok = await settings.update(s0.version, { timeoutMs: 5000 });
      expect(ok.ok).toBe(true);
      const stale = await settings.update(s0.version, { timeoutMs: 6000 });
      expect(stale).toMatchObject({
        ok: false,
        current: { version: s0.version + 1, codeMode: { timeoutMs: 5000 } },
      });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
