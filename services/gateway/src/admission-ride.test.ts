// A submit's admission carried in its job's add (`@islet/runs` admitted-add.ts) on a real
// redis-server with real BullMQ queues, counted with `INFO commandstats`: one script call a
// submit, sent as EVALSHA; a refused admission adds and counts nothing; a NOSCRIPT runs nothing,
// its EVAL retry carries the add; an add that cannot carry it sends the admission alone, first.

import { createRedis, generateSealKey, keys, type Redis, sealerFromConfig } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { type AdmissionRide, createRunStore } from '@islet/runs';
import { type RedisServer, runFixture, startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunQueueStore } from './run-queue-store.ts';

let server: RedisServer;
let redis: Redis;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
  redis = createRedis(server.url);
});

afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  redis?.disconnect();
  await server?.stop();
});

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** Calls of each command Redis ran since the last reset (a script's own commands included). */
async function calls(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm))
    out[m[1] ?? ''] = Number(m[2]);
  return out;
}

/** The gateway's submit as runs-service.ts sends it: the admission, its job's add behind it. */
function submitter(handOff: boolean, maxInFlight = 100) {
  const runs = createRunStore(redis, sealer);
  const queue = createRunQueueStore(redis, () => undefined, handOff);
  closers.push(() => Promise.all(Object.values(queue.queues).map((q) => q.close())));
  const rides: Array<AdmissionRide | undefined> = [];
  const submit = (id: string, tenant: string) => {
    const run = runFixture(id, { tenant, session: 's', principal: 'p' });
    return runs.create(
      run,
      { maxInFlight, sessionTtlSeconds: 6400, countQueued: true, carriesAdd: true },
      (counted, ride) => {
        expect(counted).toBe(true);
        rides.push(ride);
        return queue.enqueueRun({ runId: id, tenant, mode: run.mode, attempts: 1 }, ride);
      },
    );
  };
  return { submit, rides, queue: queue.queues['read-only'] };
}

describe("a submit's admission carried in its job's add (one server)", () => {
  it('an admitted submit is one EVALSHA: admission, record, queued count and add; the tenant order kept', async () => {
    const { submit, queue } = submitter(true);
    // The script's first call loads it (NOSCRIPT, then EVAL).
    expect(await submit('w0', 'ta')).toBe('created');
    await redis.config('RESETSTAT');
    const ids = ['a1', 'a2', 'a3'];
    expect(await Promise.all(ids.map((id) => submit(id, 'ta')))).toEqual(['created', 'created', 'created']);
    const c = await calls();
    // Before: the admission's EVAL (its ~3 KB text) and the add's EVALSHA, each submit.
    expect(c.eval ?? 0).toBe(0);
    expect(c.evalsha).toBe(3);
    expect(c.hincrby).toBe(3);
    expect(c.lpush).toBe(3);
    for (const id of ids) {
      expect(await redis.exists(keys.run(id))).toBe(1);
      expect(await queue.getJobState(id)).toBe('waiting');
    }
    // Added in the order submitted (BullMQ lists the oldest first).
    expect((await queue.getWaiting()).map((j) => j.id)).toEqual(['w0', 'a1', 'a2', 'a3']);
    expect(await redis.hget(keys.poolQueued('read-only'), 'ta')).toBe('4');
  });

  it('a refused admission adds and counts nothing, so nothing is taken back', async () => {
    const { submit, rides, queue } = submitter(true, 1);
    expect(await submit('r0', 'tr')).toBe('created');
    await redis.config('RESETSTAT');
    expect(await submit('r1', 'tr')).toBe('over-quota');
    const c = await calls();
    expect(c.evalsha).toBe(1);
    expect(c.hincrby ?? 0).toBe(0);
    expect(c.exists ?? 0).toBe(0);
    expect(rides[1]?.carried).toBe(true);
    expect(await queue.getJob('r1')).toBeUndefined();
    expect(await redis.exists(keys.run('r1'))).toBe(0);
    expect(await redis.hget(keys.poolQueued('read-only'), 'tr')).toBe('1');
  });

  it('a NOSCRIPT runs nothing of it: the EVAL retry carries the add, each written once', async () => {
    const { submit, queue } = submitter(true);
    expect(await submit('n0', 'tn')).toBe('created');
    await redis.script('FLUSH');
    await redis.config('RESETSTAT');
    expect(await submit('n1', 'tn')).toBe('created');
    const c = await calls();
    expect(c.eval).toBe(1);
    expect(c.hincrby).toBe(1);
    expect(c.lpush).toBe(1);
    expect(c.hset).toBe(1);
    expect(await queue.getJobState('n1')).toBe('waiting');
    expect(await redis.hget(keys.poolQueued('read-only'), 'tn')).toBe('2');
  });

  it("builds its one script call's ~100 arguments without walking them through spreads or copying them flat", async () => {
    const { submit } = submitter(true);
    expect(await submit('w0', 'tw')).toBe('created');
    // Arrays of 20 or more elements walked by the iterator protocol (an array literal's spread in
    // code V8 has not optimized: a result object an element) and `flat()` copies, during a submit.
    const iterate = Array.prototype[Symbol.iterator];
    const flat = Array.prototype.flat;
    const long: number[] = [];
    let flats = 0;
    Array.prototype[Symbol.iterator] = function (this: unknown[]) {
      if (this.length >= 20) long.push(this.length);
      return iterate.call(this);
    } as typeof iterate;
    Array.prototype.flat = function (this: unknown[], ...args: []) {
      if (this.length >= 20) flats++;
      return flat.apply(this, args);
    } as typeof flat;
    try {
      expect(await submit('w1', 'tw')).toBe('created');
    } finally {
      Array.prototype[Symbol.iterator] = iterate;
      Array.prototype.flat = flat;
    }
    // Until round 37: the record's, the ride's, the add's and the command's lists spread and copied
    // again at each hand (test/bench/README.md, `submit-gw`).
    expect(long).toEqual([]);
    expect(flats).toBe(0);
  });

  it("sends its queue's and pool's names in the script's text, not as arguments: 16 fewer, the record, count and job as before", async () => {
    const { submit, queue } = submitter(true);
    // The reference: a record the admission writes alone (no add carried).
    const alone = submitter(false);
    expect(await alone.submit('ref', 'tk')).toBe('created');
    expect(await submit('k0', 'tk')).toBe('created');
    const sent: Array<{ name: string; args: string[] }> = [];
    const send = redis.sendCommand;
    redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
      if (command.name.startsWith('eval')) sent.push({ name: command.name, args: command.args.map(String) });
      return (send as (...a: unknown[]) => unknown).call(redis, command, ...rest);
    }) as typeof send;
    try {
      expect(await submit('k1', 'tk')).toBe('created');
    } finally {
      redis.sendCommand = send;
    }
    expect(sent.map((c) => c.name)).toEqual(['evalsha']);
    const [, numKeys, ...rest] = sent[0]?.args ?? [];
    const k = queue.keys;
    const queueNames = [k.wait, k.paused, k.meta, k.id, k.completed, k.delayed, k.active, k.events, k.marker];
    const names = queueNames.concat(
      k.prioritized ?? '',
      `${k['']}idle`,
      `${k['']}idle:args`,
      keys.poolQueued('read-only'),
    );
    // a0565cd2: 36 keys (the admission's 23, the queued count's, the add's 9 and the hand-off's 3)
    // and three counts before the admission's arguments: 93 arguments.
    expect(Number(numKeys)).toBe(23);
    for (const name of names) expect(rest).not.toContain(name);
    // The admission's arguments right after its keys, the run's id first; the add's three last.
    expect(rest[23]).toBe('k1');
    expect(rest.indexOf('k1')).toBe(23);
    // What it wrote is what the arguments' form wrote: the record's fields (none of the add's
    // arguments among them), the job waiting, counted once in the pool's queued counts.
    const fieldsOf = async (id: string) => Object.keys(await redis.hgetall(keys.run(id))).sort();
    expect(await fieldsOf('k1')).toEqual(await fieldsOf('ref'));
    expect(await queue.getJobState('k1')).toBe('waiting');
    expect(await redis.hget(keys.poolQueued('read-only'), 'tk')).toBe('3');
  });

  it("sends the job's options also as the JSON the script's cjson would write, and the add stores that text: byte for byte BullMQ's own add's", async () => {
    const { submit, queue } = submitter(true);
    // The reference: the job BullMQ's own add script stores (no hand-off: its text encodes the options).
    const alone = submitter(false);
    expect(await alone.submit('oref', 'to')).toBe('created');
    expect(await submit('o0', 'to')).toBe('created');
    const sent: unknown[][] = [];
    const send = redis.sendCommand;
    redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
      if (command.name.startsWith('eval')) sent.push([...command.args]);
      return (send as (...a: unknown[]) => unknown).call(redis, command, ...rest);
    }) as typeof send;
    try {
      expect(await submit('o1', 'to')).toBe('created');
    } finally {
      redis.sendCommand = send;
    }
    const opts = (id: string) => redis.hget(`${queue.keys['']}${id}`, 'opts');
    const stored = await opts('oref');
    expect(stored).toContain('"attempts":1');
    // The call's fifth last argument is that text (6b60376a: the packed options were the last); then
    // what the packed `args` hold: the job's key, id, name and time (round 51 `submit-lua`).
    expect(String(sent[0]?.at(-5))).toBe(stored);
    const time = await redis.hget(`${queue.keys['']}o1`, 'timestamp');
    expect((sent[0] ?? []).slice(-4).map(String)).toEqual([`${queue.keys['']}o1`, 'o1', 'run', time]);
    expect(await opts('o1')).toBe(stored);
    expect(await opts('o0')).toBe(stored);
    // The script stores what it is given, not its own encoding: the same call with another text stores it.
    // (the job taken off first, so the add makes it anew).
    await redis.del(`${queue.keys['']}o1`);
    await redis.lrem(queue.keys.wait ?? '', 0, 'o1');
    const args = [...(sent[0] ?? [])];
    args[args.length - 5] = '{"attempts":1,"marker":"given"}';
    await redis.call('evalsha', ...(args as (string | Buffer)[]));
    expect(await opts('o1')).toBe('{"attempts":1,"marker":"given"}');
  });

  it("sends the created record's field names in the script's text, not as arguments: their values alone, the record as the arguments' form writes it", async () => {
    const { submit } = submitter(true);
    // The reference: a record the admission writes alone, its names among its arguments.
    const alone = submitter(false);
    expect(await alone.submit('fref', 'tf')).toBe('created');
    expect(await submit('f0', 'tf')).toBe('created');
    const sent: string[][] = [];
    const send = redis.sendCommand;
    redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
      if (command.name.startsWith('eval')) sent.push(command.args.map(String));
      return (send as (...a: unknown[]) => unknown).call(redis, command, ...rest);
    }) as typeof send;
    try {
      expect(await submit('f1', 'tf')).toBe('created');
    } finally {
      redis.sendCommand = send;
    }
    const record = await redis.hgetall(keys.run('f1'));
    const reference = await redis.hgetall(keys.run('fref'));
    // The same fields in the same order (a hash's insertion order), the run's own values where they are its own.
    expect(Object.keys(record)).toEqual(Object.keys(reference));
    for (const f of ['tenant', 'session', 'status', 'mode', 'attempts', 'principal'])
      expect(record[f], f).toBe(reference[f]);
    expect(record.id).toBe('f1');
    const args = sent[0] ?? [];
    // 6b60376a: each name right before its value (e.g. 'createdAt', then the time).
    for (const name of Object.keys(record)) expect(args, name).not.toContain(name);
    for (const f of ['description', 'createdAt', 'pick']) expect(args).toContain(record[f]);
  });

  it("reads the job's data as vouched only where it is the run's format-2 data of the admitted tenant (round 51 `submit-lua`)", async () => {
    const runs = createRunStore(redis, sealer);
    const queue = createRunQueueStore(redis, () => undefined, true);
    closers.push(() => Promise.all(Object.values(queue.queues).map((q) => q.close())));
    const submit = (id: string, tenant: string, jobTenant: string) => {
      const run = runFixture(id, { tenant, session: 's', principal: 'p' });
      return runs.create(
        run,
        { maxInFlight: 100, sessionTtlSeconds: 6400, countQueued: true, carriesAdd: true },
        (_counted, ride) =>
          queue.enqueueRun({ runId: id, tenant: jobTenant, mode: run.mode, attempts: 1 }, ride),
      );
    };
    const sources: string[] = [];
    const run = LuaScript.prototype.run;
    LuaScript.prototype.run = function (this: LuaScript, ...args: Parameters<typeof run>) {
      sources.push(this.source);
      return run.apply(this, args);
    };
    try {
      expect(await submit('v1', 'tv', 'tv')).toBe('created');
      expect(await submit('v2', 'tv', 'other')).toBe('created');
    } finally {
      LuaScript.prototype.run = run;
    }
    const composites = sources.filter((t) => t.includes('local answer, createdRun = admit()'));
    expect(composites).toHaveLength(2);
    expect(composites[0]).toContain('local admittedData, admittedTenant = AD[2], ARGV[16]');
    expect(composites[1]).not.toContain('admittedData');
  });

  it('an add that cannot carry it (no hand-off) sends the admission alone, before the add, as before', async () => {
    const { submit, rides, queue } = submitter(false, 1);
    expect(await submit('s0', 'ts')).toBe('created');
    await redis.config('RESETSTAT');
    expect(await submit('s1', 'ts')).toBe('over-quota');
    const c = await calls();
    // The admission's EVAL (counting the job whatever the answer) and BullMQ's own add: the
    // refused job went out, for the caller to take back (runs-service.ts).
    expect(c.eval).toBe(1);
    expect(c.hincrby).toBe(1);
    expect(rides[1]?.carried).toBe(false);
    expect(await queue.getJobState('s0')).toBe('waiting');
    expect(await queue.getJobState('s1')).toBe('waiting');
    expect(await redis.hget(keys.poolQueued('read-only'), 'ts')).toBe('2');
  });
});
