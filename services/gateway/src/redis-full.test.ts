/**
 * One tenant must not fill Redis for every tenant. A Redis with a small `maxmemory`; tenant `hog`
 * submits runs that print a MiB each and end (written as a runner ends them, through the run
 * store): its share of Redis is counted as written and its submits are refused (507 problem, for
 * it only) before Redis is full, while `calm` still submits and reads. A run's output is stored
 * once (the result text is not a second copy of the logs) and reads back as the same text. And
 * when Redis is full all the same (anything may fill it), reads still answer and writes get a 503
 * with Retry-After, never a 500. Real Redis, the real app through inject.
 */
import { keys } from '@islet/core';
import type { StoredRun } from '@islet/runs';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { testLogger } from '../test/gateway-harness.ts';
import { createGatewayDeps } from './create-deps.ts';

const MAXMEMORY = 48 * 1024 * 1024;
const MIB = 1024 * 1024;
let hog: string;
let calm: string;

const { app, deps } = await onGatewayApp({
  redis: { maxMemoryBytes: MAXMEMORY },
  env: {
    ISLET_INTERNAL_TOKEN: 'internal-token-for-redis-full',
    // A quarter of maxmemory each (the default share), generous rate limits.
    ISLET_RATE_LIMIT_PER_MINUTE: '100000',
  },
});

beforeAll(async () => {
  for (const id of ['hog', 'calm']) await deps.tenants.createTenant({ id, name: id });
  hog = (await deps.tenants.createKey('hog', ['apps.use'])).key;
  calm = (await deps.tenants.createKey('calm', ['apps.use'])).key;
});

const submit = (key: string) =>
  app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${key}` },
    payload: { code: 'for (let i = 0; i < 63; i++) console.log("x".repeat(1 << 20))', description: 'print' },
  });
const read = (key: string, id: string) =>
  app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: { authorization: `Bearer ${key}` } });

/** Ends the run as a runner would, having printed `lines` lines of a MiB. */
async function endPrinting(id: string, lines: number) {
  const run = (await deps.runs.get(id)) as StoredRun;
  const logs = Array.from({ length: lines }, (_, i) => ({
    level: 'log' as const,
    text: `${i}`.padEnd(MIB, 'x'),
  }));
  const text = logs.map((l) => l.text).join('\n');
  await deps.runs.finish(run, { status: 'Completed', result: { _tag: 'Completed', logs }, text });
  return text;
}

const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await deps.redis.info('memory'))?.[1]);

describe('a tenant filling Redis', () => {
  it("stores a run's output once, and reads back the very text the runner wrote (format 2, the default)", async () => {
    expect(deps.config.ISLET_WRITE_FORMAT).toBe('2');
    const res = await submit(calm);
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json().id as string;
    const text = await endPrinting(id, 2);
    const stored = await deps.redis.hgetall(keys.run(id));
    expect([stored.result, stored.text, stored.textRef]).toEqual([undefined, undefined, undefined]);
    // `ended` seals the result with the text left out (rendered from the result on read,
    // runs sealed-fields.ts): one copy of the lines, base64 (4/3) — two copies would be 8/3.
    expect(Buffer.byteLength(stored.ended ?? '')).toBeGreaterThan(Buffer.byteLength(text));
    expect(Buffer.byteLength(stored.ended ?? '')).toBeLessThan(1.5 * Buffer.byteLength(text));
    const record = await read(calm, id);
    expect(record.statusCode).toBe(200);
    expect(record.json().text).toBe(text);
  });

  it("stores a run's output once, and reads back the very text the runner wrote (format 1)", async () => {
    const one = await createGatewayDeps({ ...deps.config, ISLET_WRITE_FORMAT: '1' }, testLogger());
    try {
      const res = await submit(calm);
      expect(res.statusCode, res.body).toBe(202);
      const id = res.json().id as string;
      const run = (await one.runs.get(id)) as StoredRun;
      const logs = [0, 1].map((i) => ({ level: 'log' as const, text: `${i}`.padEnd(MIB, 'x') }));
      const text = logs.map((l) => l.text).join('\n');
      await one.runs.finish(run, { status: 'Completed', result: { _tag: 'Completed', logs }, text });
      const stored = await deps.redis.hgetall(keys.run(id));
      expect(stored.text).toBeUndefined();
      // The reference carries no copy of the lines: a thousandth of the text it stands for, not a
      // second copy of it.
      expect(stored.textRef).toBeDefined();
      expect(Buffer.byteLength(stored.textRef ?? '') * 1000).toBeLessThan(Buffer.byteLength(text));
      const record = await read(calm, id);
      expect(record.statusCode).toBe(200);
      expect(record.json().text).toBe(text);
    } finally {
      await one.close();
    }
  });

  it('is refused at its share (507, that tenant only) while another tenant still submits and reads', async () => {
    let refused: Awaited<ReturnType<typeof submit>> | undefined;
    for (let i = 0; i < 60 && !refused; i++) {
      const res = await submit(hog);
      if (res.statusCode !== 202) {
        refused = res;
        break;
      }
      await endPrinting(res.json().id as string, 2);
    }
    expect(refused?.statusCode, refused?.body).toBe(507);
    expect(String(refused?.headers['content-type'])).toContain('application/problem+json');
    expect(refused?.json().type).toBe('https://islet.dev/problems/storage-quota-exceeded');
    expect(refused?.json().limitBytes).toBeLessThanOrEqual(MAXMEMORY / 4);
    // Refused by the first submit after its retained runs reached the share: past it by at most the
    // last run's output (2 MiB) and record, however fast the runs ended.
    expect(refused?.json().usedBytes).toBeGreaterThanOrEqual(refused?.json().limitBytes);
    expect(refused?.json().usedBytes).toBeLessThan(refused?.json().limitBytes + 3 * MIB);
    // Refused before Redis is full. used_memory also holds what the allocator and the clients' query
    // buffers have not given back yet after MiB-sized writes (39.6 of 48 MiB seen once), so the
    // bound is "not full", not the share's sum.
    expect(await usedMemory()).toBeLessThan(MAXMEMORY * 0.9);
    // The hog stays refused; the other tenant is not affected.
    expect((await submit(hog)).statusCode).toBe(507);
    // The share is read in the admission: a submit refused before it (an unknown connection)
    // still hears the share's, as when the share was read first.
    const both = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${hog}` },
      payload: { code: 'return 1', description: 'one', connections: ['no-such-connection'] },
    });
    expect(both.statusCode, both.body).toBe(507);
    expect(await deps.redis.zcard(keys.inFlight('hog'))).toBe(0);
    const mine = await submit(calm);
    expect(mine.statusCode, mine.body).toBe(202);
    const id = mine.json().id as string;
    await endPrinting(id, 1);
    expect((await read(calm, id)).statusCode).toBe(200);
  });

  it('at maxmemory reads still answer and writes get 503 + Retry-After, never 500', async () => {
    const res = await submit(calm);
    expect(res.statusCode).toBe(202);
    const id = res.json().id as string;
    // Fill Redis to maxmemory by other means (whatever filled it, it is full): ever smaller values
    // until even a small write is refused (a refused big write's own buffer is freed after it).
    let i = 0;
    for (const size of [MIB, 64 * 1024, 1024, 16]) {
      const filler = 'x'.repeat(size);
      try {
        for (let n = 0; n < 50_000; n++, i++) await deps.redis.set(`filler:${i}`, filler);
        throw new Error('Redis never filled');
      } catch (err) {
        expect((err as Error).message).toMatch(/^OOM/);
      }
    }
    // Full, and kept full: Redis gives back memory by itself (a client's query buffer shrunk by its
    // cron after MiB-sized writes, other clients' buffers), and one byte under maxmemory admits a
    // whole write (a submit once read 202 on a loaded CI box). The limit goes a MiB under what is
    // held now, so what Redis frees meanwhile does not make room; put back below.
    await deps.redis.config('SET', 'maxmemory', String((await usedMemory()) - MIB));
    try {
      const got = await read(calm, id);
      expect(got.statusCode, got.body).toBe(200);
      expect(got.json().id).toBe(id);
      expect(
        (
          await app.inject({
            method: 'GET',
            url: '/v1/connections',
            headers: { authorization: `Bearer ${calm}` },
          })
        ).statusCode,
      ).toBe(200);
      for (const key of [calm, hog]) {
        const refused = await submit(key);
        expect([503, 507]).toContain(refused.statusCode);
        expect(String(refused.headers['content-type'])).toContain('application/problem+json');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      const full = await submit(calm);
      expect(full.statusCode, full.body).toBe(503);
      expect(full.json().type).toBe('https://islet.dev/problems/unavailable');
      // A bad key is still a 401 (its failure cannot be counted, it is refused all the same).
      const bad = await app.inject({
        method: 'GET',
        url: '/v1/connections',
        headers: { authorization: 'Bearer nope' },
      });
      expect(bad.statusCode).toBe(401);
    } finally {
      await deps.redis.config('SET', 'maxmemory', String(MAXMEMORY));
      for (let j = 0; j <= i; j += 1000)
        await deps.redis.del(...Array.from({ length: 1000 }, (_, k) => `filler:${j + k}`));
    }
    expect((await submit(calm)).statusCode).toBe(202);
  });
});
