/**
 * `node test/bench/end-start-baked-counts.ts`: Redis's instructions and the request's bytes of a
 * run's end fused with its completion and the next job's start (end-complete-store.ts,
 * `endCompleteStartScript`: the call every run's end makes at 16 clients) unbaked (moveToFinished's
 * 14 keys, BullMQ's 9 arguments, the end's keys and arguments, the start's 24 and the delay) and
 * baked with the worker's names (@islet/runs baked-call.ts, round 45 `end-start-baked`). A
 * redis-server under valgrind's callgrind per side and collection point (`--toggle-collect`:
 * `evalGenericCommand`, the script call with its commands and its KEYS/ARGV tables; that plus
 * `processMultibulkBuffer` and `freeClientArgv`, the request's parse and its arguments' free, the
 * restores' alike on both sides; `readQueryFromClient` (the whole request with the restores'
 * FLUSHALL frees) moved by ±30 k between redis-server processes, their dicts' hash seeds). One state (a run started by the fused fetch, its end handed to the completion, two jobs
 * behind it) restored from DUMPs before each of `N` (default 100) calls; counters zeroed after 5
 * warm calls (the script's compile dropped). Commands Redis ran (INFO commandstats, a script's own
 * counted) a call, both sides. Sides in the order `SIDES` (default "unbaked baked baked unbaked").
 * `NEXT=0`: the completion brings no next job (`endAndCompleteScript`, baked since round 46).
 * `DUMP=1` prints the end's keys and arguments. `IDS=uuid`: the runs' ids (and jobs') are 36-character
 * UUIDs, as the gateway makes them (runs-service.ts), not `c1`… (round 47 `end-keys`: the end's
 * run keys made from the id in the text). `NO_DECISIONS=0`: the end not told the run has no decisions
 * (round 48: its decisions EXPIRE sent). `WAITED=1`: the end as a waited trivial run's in the
 * cluster bench (round 50 `end-script`): pushed to its waiter (`pushEnd`), no call sent in its
 * attempt (`sentNoCall`: push mode '4'), its record `quiet` (no tenant stream listened at its
 * submit), so its 18 commands are the ones MONITOR shows there. Counts: no bench lock needed.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRedis, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import {
  createCallJournal,
  createRunLifecycle,
  createRunStore,
  endAndCompleteScript,
  endCompleteStartScript,
  handedRefetch,
  type RunLease,
  startArgsList,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Job, Queue, Worker } from 'bullmq';
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { version } from 'bullmq/dist/esm/version.js';
import type { Redis } from 'ioredis';
import { pack } from 'msgpackr';
import { completingExec, type PendingEnd } from '../../services/runner/src/end-complete-store.ts';
import { FETCH_AND_LOOK, startingClient } from '../../services/runner/src/fetch-start-store.ts';
import { FETCH_KEY_NAMES } from '../../services/runner/src/handoff-store.ts';
import { callgrindRedisAt } from './callgrind-redis.ts';

const N = Number(process.env.N ?? 100);
const SIDES = (process.env.SIDES ?? 'unbaked baked baked unbaked').split(' ');
// `+` joins functions collected together: the request's parse (`processMultibulkBuffer`, its
// argument objects made) and its arguments' free (`freeClientArgv`) beside the script call; the
// restores' parse counts alike on both sides (the same bytes), their FLUSHALL not at all.
const POINTS = (
  process.env.POINTS ?? 'evalGenericCommand evalGenericCommand+processMultibulkBuffer+freeClientArgv'
).split(' ');
const mode = 'read-only';
const out = `/tmp/end-start-baked-counts/${Date.now()}`;
mkdirSync(out, { recursive: true });
const UNBAKED = endCompleteStartScript(
  moveToFinished.content,
  FETCH_AND_LOOK,
  handedRefetch(moveToActive.content),
);
// NEXT=0: the completion brings no next job (the end and completion alone, `endAndCompleteScript`).
const NEXT = process.env.NEXT !== '0';
const UNBAKED_END = endAndCompleteScript(moveToFinished.content);
const terms = { mode, share: 0.5, cap: 0, leaseMs: 30_000 };
const DEFER_MS = 60_000;
const WAITED = process.env.WAITED === '1';
/** The runs' ids: the ended run's, the next job's, the one after. */
const [C1, C2, C3] = [1, 2, 3].map((n) =>
  process.env.IDS === 'uuid' ? `6f1c2d3e-4b5a-4c6d-8e7f-90a1b2c3d4e${n}` : `c${n}`,
) as [string, string, string];

/** RESP bytes of a command. */
function respBytes(parts: unknown[]): number {
  let n = `*${parts.length}\r\n`.length;
  for (const p of parts) {
    const len = Buffer.isBuffer(p) ? p.length : Buffer.byteLength(p === undefined ? '' : String(p));
    n += `$${len}\r\n`.length + len + 2;
  }
  return n;
}

/** Commands Redis ran so far, by name. */
async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const text = await redis.info('commandstats');
  const m = new Map<string, number>();
  for (const x of text.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) m.set(x[1] as string, Number(x[2]));
  return m;
}

async function side(name: string, point: string) {
  const file = `${out}/${name}-${point}.cg`;
  const s = await callgrindRedisAt(point, file);
  const redis = createRedis(s.url);
  const conn = redis.duplicate();
  const queue = new Queue('end-start-baked-counts', { connection: conn, prefix: QUEUE_PREFIX });
  const worker = new Worker('end-start-baked-counts', null, {
    connection: conn,
    prefix: QUEUE_PREFIX,
    autorun: false,
    lockDuration: 30_000,
    name: 'vm',
  });
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  const runs = createRunStore(redis, sealer);
  const life = createRunLifecycle({ runs, journal: createCallJournal({ redis, sealer }) });
  await redis.hset(keys.poolSlots(mode), 'r1', `100000:${Date.now() + 3_600_000}`);
  for (const id of [C1, C2, C3]) {
    await runs.create(runFixture(id, { mode }));
    if (WAITED) await redis.hset(keys.run(id), 'quiet', '1');
    await queue.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() }, { jobId: id });
  }
  const start = () => life.fetchedStart(terms);
  const token = `w1:${C1}`;
  const fetchKeys = FETCH_KEY_NAMES.map((k) => queue.keys[k] ?? '');
  const fetching = startingClient(
    redis as never,
    start,
    () => undefined,
    () => undefined,
    { deferMs: DEFER_MS },
  );
  await fetching.runCommand(`moveToActive:${version}`, [
    ...fetchKeys,
    queue.toKey(''),
    Date.now(),
    pack({ token, lockDuration: 30_000, name: 'vm' }),
  ]);
  let handed: { keys: string[]; args: (string | number)[] } | undefined;
  const lease: RunLease = {
    ...terms,
    tenant: 'acme',
    jobId: C1,
    acquired: () => undefined,
    held: () => true,
    released: () => undefined,
    deferEnd: (k, a) => {
      handed = { keys: k, args: a };
      return new Promise(() => undefined);
    },
  };
  await runs.finish(
    { id: C1, tenant: 'acme', lease, ...(WAITED ? { pushEnd: true } : {}) },
    {
      status: 'Completed',
      result: { _tag: 'Completed', value: 1, logs: [] },
      text: '1',
      // As the runner's executor says for a run's first plain attempt with no call and no wider
      // access (round 48 `decisions-end`): the end sends no decisions EXPIRE. `NO_DECISIONS=0`: as
      // any other end (a base before it ignores the field).
      ...(process.env.NO_DECISIONS === '0' ? {} : { noDecisions: true }),
      ...(WAITED ? { sentNoCall: true } : {}),
      onEnded: () => undefined,
    },
  );
  if (!handed) throw new Error('the end was not handed over');
  const end = handed;
  if (process.env.DUMP) console.log(JSON.stringify({ keys: end.keys, args: end.args }, null, 1));
  const job = await Job.fromId(queue, C1);
  const scripts = (worker as unknown as { scripts: { moveToCompletedArgs(...a: unknown[]): unknown[] } })
    .scripts;
  const bullCall = scripts.moveToCompletedArgs(job, '1', { count: 100 }, token, NEXT);
  const bullKeys = bullCall.slice(0, 14) as string[];
  const bullArgs = bullCall.slice(14) as (string | number)[];
  const snap: [string, number, Buffer][] = [];
  for (const k of await redis.keys('*')) {
    const d = await redis.dumpBuffer(k);
    if (d) snap.push([k, Math.max(0, await redis.pttl(k)), d]);
  }
  let sent: unknown[] = [];
  const origSend = redis.sendCommand.bind(redis);
  (redis as unknown as { sendCommand: typeof redis.sendCommand }).sendCommand = (cmd) => {
    const c = cmd as unknown as { name: string; args: unknown[] };
    if (c.name === 'evalsha' || c.name === 'eval') sent = [c.name, ...c.args];
    return origSend(cmd);
  };
  let startedId = '';
  const exec = completingExec(
    version,
    async () => {
      throw new Error('not expected');
    },
    () =>
      ({
        keys: end.keys,
        args: end.args,
        resolve: () => undefined,
        reject: () => undefined,
        startNext: {
          start,
          started: (id: string) => {
            startedId = id;
          },
          hooks: { deferMs: DEFER_MS, moved: () => undefined },
        },
      }) satisfies PendingEnd,
  );
  let before = new Map<string, number>();
  for (let i = -5; i < N; i++) {
    if (i === 0) {
      s.zero();
      before = await commandStats(redis);
    }
    await redis.flushall();
    for (const [k, ttl, d] of snap) await redis.restore(k, ttl, d);
    startedId = '';
    if (name === 'baked') await exec(redis as never, 'moveToFinished', bullCall);
    else if (!NEXT)
      await UNBAKED_END.run(
        redis,
        bullKeys.concat(end.keys),
        bullArgs.concat(end.args, [14, bullArgs.length]),
      );
    else {
      const reply = (await UNBAKED.run(
        redis,
        bullKeys.concat(end.keys),
        bullArgs.concat(end.args, [14, bullArgs.length], startArgsList(start()), DEFER_MS),
      )) as unknown[][];
      startedId = String(reply[1]?.[1]);
    }
    if (NEXT && startedId !== C2) throw new Error(`the next job started: ${startedId}`);
  }
  const after = await commandStats(redis);
  const ran: string[] = [];
  for (const [cmd, n] of after) {
    const d = n - (before.get(cmd) ?? 0);
    if (d > 0 && !['flushall', 'restore', 'info'].includes(cmd)) ran.push(`${cmd} ${(d / N).toFixed(2)}`);
  }
  redis.sendCommand = origSend;
  await worker.close();
  await queue.close();
  conn.disconnect();
  redis.disconnect();
  await s.stop();
  const cg = readFileSync(file, 'utf8');
  const total = Number(/^(?:summary|totals): (\d+)/m.exec(cg)?.[1] ?? Number.NaN);
  const keysSent = Number(sent[2]);
  // DUMP=1: the call as sent (its keys and arguments, each with its bytes).
  if (process.env.DUMP)
    console.log(
      sent
        .slice(3)
        .map(
          (a, i) =>
            `${i < keysSent ? 'K' : 'A'}${i < keysSent ? i + 1 : i + 1 - keysSent} ${respBytes([a]) - 4 - String(respBytes([a])).length} ${Buffer.isBuffer(a) ? `<${a.length} B>` : String(a).slice(0, 60)}`,
        )
        .join('\n'),
    );
  console.log(
    `${name} ${point}: ${(total / N).toFixed(0)} instructions a call (${N} calls), request ${respBytes(sent)} B (${keysSent} keys, ${sent.length - 3 - keysSent} arguments); commands a call: ${ran.sort().join(', ')}`,
  );
}

for (const point of POINTS) for (const name of SIDES) await side(name, point);
