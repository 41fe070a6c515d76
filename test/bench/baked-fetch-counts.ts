/**
 * `node test/bench/baked-fetch-counts.ts`: Redis's instructions and the request's bytes of the
 * runner's fused fetch (fetch-start-store.ts) unbaked (its 11 keys, BullMQ's 3 arguments, the
 * start's 24 and the delay as arguments) and baked with the mode's names (@islet/runs
 * baked-fetch.ts, since replaced: no key, 10 arguments), round 44 `fetch-baked`; round 45 `end-start-baked`: baked-call.ts,
 * the start's fixed terms all baked, 4 arguments). A redis-server under valgrind's
 * callgrind per side and per collection point (`--toggle-collect`: `evalGenericCommand`, the
 * script call with its commands and its KEYS/ARGV tables; `readQueryFromClient`, that plus the
 * request's read and parse): one run's job (a fresh record, a job, a free slot) restored from one
 * DUMP before each of `N` (default 200) fetches, the keys a fetch made deleted; the restores
 * count in the second point alike on both sides. Sides in the order `SIDES` (default
 * "unbaked baked baked unbaked"). Every command's calls a fetch printed (round 52 `fetch-token`: the
 * restores' RESTORE and DEL beside the fetch's own). Counts: no bench lock needed.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  fetchLeaseBeginScript,
  startArgsList,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Queue } from 'bullmq';
import { version } from 'bullmq/dist/esm/version.js';
import { pack } from 'msgpackr';
import { FETCH_AND_LOOK, startingClient } from '../../services/runner/src/fetch-start-store.ts';
import { FETCH_KEY_NAMES } from '../../services/runner/src/handoff-store.ts';
import { callgrindRedisAt } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 200);
const SIDES = (process.env.SIDES ?? 'unbaked baked baked unbaked').split(' ');
const POINTS = ['evalGenericCommand', 'readQueryFromClient'];
const mode = 'read-only';
const out = `/tmp/baked-fetch-counts/${Date.now()}`;
mkdirSync(out, { recursive: true });
const UNBAKED = fetchLeaseBeginScript(FETCH_AND_LOOK, 'nil', true);

/** RESP bytes of a command. */
function respBytes(parts: (string | number | Buffer)[]): number {
  let n = `*${parts.length}\r\n`.length;
  for (const p of parts) {
    const len = Buffer.isBuffer(p) ? p.length : Buffer.byteLength(String(p));
    n += `$${len}\r\n`.length + len + 2;
  }
  return n;
}

async function side(name: string, point: string): Promise<{ total: number; bytes: number }> {
  const file = `${out}/${name}-${point}.%p`;
  const s = await callgrindRedisAt(point, file.replace('%p', 'cg'));
  const redis = createRedis(s.url);
  const queueConnection = redis.duplicate();
  const queue = new Queue('baked-fetch-counts', { connection: queueConnection, prefix: QUEUE_PREFIX });
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const runs = createRunStore(redis, sealer);
  const life = createRunLifecycle({ runs, journal: createCallJournal({ redis, sealer }) });
  await redis.hset(keys.poolSlots(mode), 'r1', `100000:${Date.now() + 3_600_000}`);
  await runs.create(runFixture('c1', { mode }));
  await queue.add('run', { runId: 'c1', tenant: 'acme', enqueuedAtMs: Date.now() }, { jobId: 'c1' });
  const before = await redis.keys('*');
  const snap: [string, Buffer][] = [];
  for (const k of before) snap.push([k, (await redis.dumpBuffer(k)) as Buffer]);
  const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
  const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };
  const start = () => life.fetchedStart(terms);
  const bull = (i: number) => [
    queue.toKey(''),
    Date.now(),
    pack({ token: `w:${i}`, lockDuration: 30_000, name: 'vm' }),
  ];
  let sent: (string | number | Buffer)[] = [];
  const client = startingClient(
    redis as never,
    start,
    () => undefined,
    () => undefined,
    { deferMs: 60_000 },
  );
  // The baked call's bytes: its EVALSHA as ioredis writes it (captured from the script's run).
  const origSend = redis.sendCommand.bind(redis);
  (redis as unknown as { sendCommand: typeof redis.sendCommand }).sendCommand = (cmd) => {
    const c = cmd as unknown as { name: string; args: (string | number | Buffer)[] };
    if (c.name === 'evalsha' || c.name === 'eval') sent = [c.name, ...c.args];
    return origSend(cmd);
  };
  let created: string[] = [];
  let bytes = 0;
  for (let i = -5; i < N; i++) {
    if (i === 0) {
      await redis.config('RESETSTAT');
      s.zero();
    }
    if (i > -5) {
      if (created.length) await redis.del(...created);
      for (const [k, d] of snap) await redis.restore(k, 0, d, 'REPLACE');
    }
    if (name === 'baked') await client.runCommand(`moveToActive:${version}`, [...fetchKeys, ...bull(i)]);
    else
      await UNBAKED.run(
        redis,
        fetchKeys,
        (bull(i) as (string | number)[]).concat(startArgsList(start()), 60_000),
      );
    if (i === -5) created = (await redis.keys('*')).filter((k) => !before.includes(k));
    bytes = respBytes(sent);
  }
  const all = (await redis.info('commandstats')).split('\n').filter((l) => l.startsWith('cmdstat_'));
  const stats = all.filter((l) => l.startsWith('cmdstat_evalsha'));
  // Every command's calls a fetch (the restores' RESTORE, DEL and the probe's own counted too: alike on both sides).
  const perFetch = all
    .map((l) => /^cmdstat_([^:]+):calls=(\d+)/.exec(l))
    .filter((m) => m !== null)
    .map((m) => `${m[1]} ${(Number(m[2]) / N).toFixed(2)}`)
    .join(', ');
  redis.sendCommand = origSend;
  await queue.close();
  queueConnection.disconnect();
  redis.disconnect();
  await s.stop();
  const cg = readFileSync(file.replace('%p', 'cg'), 'utf8');
  const total = Number(/^(?:summary|totals): (\d+)/m.exec(cg)?.[1] ?? Number.NaN);
  console.log(
    `${name} ${point}: ${(total / N).toFixed(0)} instructions a fetch (${N} fetches), request ${bytes} B; ${stats[0]?.trim() ?? ''}`,
  );
  console.log(`${name} ${point}: commands a fetch: ${perFetch}`);
  return { total, bytes };
}

for (const point of POINTS) for (const name of SIDES) await side(name, point);
