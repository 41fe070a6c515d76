import { startRedis } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { keys } from './keys.ts';
import { createLogger } from './logger.ts';
import { createRedis } from './redis.ts';
import { createRunStore } from './run-store.ts';
import { createSealer, generateSealKey, parseSealKeys, sealerFromConfig } from './sealer.ts';
import { createSettingsStore } from './settings-store.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

describe('loadConfig', () => {
  it('applies defaults and parses lists', () => {
    const c = loadConfig({ ...base, ISLET_RUNNER_MODES: 'read-only, workspace-write', ISLET_PORT: '9000' });
    expect(c.ISLET_PORT).toBe(9000);
    expect(c.ISLET_RUNNER_MODES).toEqual(['read-only', 'workspace-write']);
    expect(c.ISLET_RUNNER_CONCURRENCY).toBe(4);
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

describe('stores on a real redis', () => {
  it('settings compare-and-set and a single final status', async () => {
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

      const sealer = sealerFromConfig(base);
      const runs = createRunStore(redis, sealer);
      const now = Date.now();
      const run = {
        id: 'r1',
        tenant: 't1',
        session: 's',
        turn: 't',
        callId: 'c',
        status: 'Running' as const,
        mode: 'read-only' as const,
        code: 'return 1',
        description: 'Return one',
        request: { connections: [], bindings: [] },
        createdAt: now,
        updatedAt: now,
        attempts: 0,
        cancelRequested: false,
        clockMs: now,
        seed: 'r1',
      };
      await runs.create(run);
      expect(await redis.hget('islet:run:{r1}', 'code')).toMatch(/^v1\.k1\./);
      const done = {
        status: 'Completed' as const,
        result: { _tag: 'Completed' as const, value: 1, logs: [] },
        text: '1',
      };
      expect(await runs.finish(run, done)).toBe(true);
      expect(await runs.finish(run, { ...done, status: 'Cancelled' })).toBe(false);
      expect((await runs.get('r1'))?.status).toBe('Completed');
      const events = await runs.readEvents('r1');
      expect(events.map((e) => e.type)).toEqual(['status', 'end']);
      expect(await runs.inFlightCount('t1')).toBe(0);

      // One server: `then` (the gateway's enqueue) is sent right behind the record's write, before
      // its reply, and what it sends still finds the record (one connection, commands in order).
      const followed = { ...run, id: 'r2', seed: 'r2' };
      const admission = { maxInFlight: 5, sessionTtlSeconds: 60 };
      let seen: string | null | undefined;
      expect(
        await runs.create(followed, admission, async () => {
          seen = await redis.hget('islet:run:{r2}', 'id');
        }),
      ).toBe('created');
      expect(seen).toBe('r2');
      // Admission and record are one script there, and `then` is sent behind it before its answer:
      // a refused run leaves no record, but `then` ran (its caller takes the job back).
      let called = false;
      expect(
        await runs.create({ ...run, id: 'r3', seed: 'r3' }, { ...admission, maxInFlight: 1 }, async () => {
          called = true;
        }),
      ).toBe('over-quota');
      expect(called).toBe(true);
      expect(await redis.exists('islet:run:{r3}')).toBe(0);
      expect(await redis.zscore(keys.inFlight('t1'), 'r3')).toBeNull();

      // An Idempotency-Key a retry took over: the first request is refused at its admission, on
      // both paths (one script with its enqueue; tenant half alone), and writes nothing.
      const idem = keys.idempotency('t1', 'k');
      await redis.set(idem, JSON.stringify({ runId: 'r5', hash: 'h' }));
      for (const [i, then] of [
        [4, async () => undefined],
        [6, undefined],
      ] as const) {
        const stale = { ...run, id: `r${i}`, seed: `r${i}` };
        expect(await runs.create(stale, { ...admission, idempotencyKey: idem }, then)).toBe('superseded');
        expect(await redis.exists(`islet:run:{r${i}}`)).toBe(0);
        expect(await redis.zscore(keys.inFlight('t1'), `r${i}`)).toBeNull();
      }
      expect(
        await runs.create({ ...run, id: 'r5', seed: 'r5' }, { ...admission, idempotencyKey: idem }),
      ).toBe('created');
      // A take-over needs the key unchanged and the first run never admitted.
      const held = JSON.stringify({ runId: 'r5', hash: 'h' });
      const next = JSON.stringify({ runId: 'r7', hash: 'h' });
      expect(await runs.takeOverIdempotency('t1', idem, held, next, 60, 'r5')).toBe(false);
      await redis.zrem(keys.inFlight('t1'), 'r5');
      expect(await runs.takeOverIdempotency('t1', idem, 'something else', next, 60, 'r5')).toBe(false);
      expect(await runs.takeOverIdempotency('t1', idem, held, next, 60, 'r5')).toBe(true);
      expect(await redis.get(idem)).toBe(next);
      await runs.releaseIdempotency(idem, held);
      expect(await redis.get(idem)).toBe(next);
      await runs.releaseIdempotency(idem, next);
      expect(await redis.exists(idem)).toBe(0);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
