/**
 * Waiting holds nothing: run_code runs held in place for a person's decision park outside the
 * runner's slots (services/runner slot-gate.ts, call-parking.ts). One runner with 4 slots, 16 runs
 * waiting: a trivial run of the same tenant and mode still completes while all 16 wait, the
 * parked-runs gauge shows all 16 (3 with their isolate, the rest released), and once the decisions
 * are answered every run completes with its own result, released runs replayed from their journal
 * and no App call sent twice.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, httpConnection, type Loose, startAppServer, until } from './helpers.ts';

const SLOTS = 4;
const WAITING = 16;
const KEPT = 3;

let cluster: Cluster;
let a: Api;
let redis: Redis;
let app: Awaited<ReturnType<typeof startAppServer>>;
let mail: Loose;

beforeAll(async () => {
  cluster = await startCluster({
    gateways: 1,
    runners: [{ modes: ['read-only'], concurrency: SLOTS }],
    env: { ISLET_RUNNER_PARKED_ISOLATES_MAX: String(KEPT) },
  });
  redis = new Redis(cluster.redisUrl);
  a = api(cluster.gatewayUrls[0]!, cluster.devKey);
  app = await startAppServer((d) => ({
    status: 200,
    body: JSON.stringify({ structuredContent: { tool: d.body.tool, echo: d.body.arguments } }),
  }));
  mail = await httpConnection(a, 'Mail', app.url, { read_note: 'allow', send_email: 'ask' });
}, 90_000);

afterAll(async () => {
  redis?.disconnect();
  await app?.close();
  await cluster?.stop();
});

/** The runner's parked-runs gauge: { kept, released }. */
async function parked(): Promise<{ kept: number; released: number }> {
  const text = await (await fetch(`${cluster.runners[0]!.url}/metrics`)).text();
  const read = (isolate: string) => {
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('islet_runner_parked_runs{') &&
          l.includes('mode="read-only"') &&
          l.includes(`isolate="${isolate}"`),
      );
    return line ? Number(line.split(' ').pop()) : 0;
  };
  return { kept: read('kept'), released: read('released') };
}

const program = (n: number) => `
const note = await apps.mail.read_note({ id: ${n} });
const sent = await apps.mail.send_email({ to: "team@example.com", note: note.structuredContent.echo.id });
return { n: note.structuredContent.echo.id, sent: sent.structuredContent.echo, now: Date.now(), r: Math.random() };`;

const record = async (id: string) => (await a('GET', `/v1/code-runs/${id}`)).body;

describe('runs waiting for a person hold no runner slot', () => {
  it(`${WAITING} held runs on ${SLOTS} slots: a trivial run completes meanwhile; all finish once answered`, async () => {
    const ids: string[] = [];
    for (let n = 0; n < WAITING; n++) {
      const submitted = await a('POST', '/v1/runs', {
        style: 'run_code',
        approval: 'hold',
        code: program(n),
        description: 'Read a note and mail it',
        sessionId: 'sess-park',
        connections: [mail.id],
      });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
      ids.push(submitted.body.id as string);
    }
    // Every run waits for its decision, parked: the gauge counts them all, the memory budget's
    // worth with their isolate and the rest released.
    await until(async () => {
      const p = await parked();
      return p.kept + p.released === WAITING && p;
    }, 90_000);
    expect(await parked()).toEqual({ kept: KEPT, released: WAITING - KEPT });
    for (const id of ids) expect((await record(id)).status).toBe('Waiting');

    // Same tenant, same mode: a trivial run starts and completes while all of them wait.
    const trivial = await a(
      'POST',
      '/v1/runs',
      {
        style: 'run_code',
        code: 'return 6 * 7',
        description: 'Multiply two numbers',
        sessionId: 'sess-park',
      },
      { prefer: 'wait=30' },
    );
    expect(trivial.body).toMatchObject({ status: 'Completed', result: { value: 42 } });
    expect(await parked()).toEqual({ kept: KEPT, released: WAITING - KEPT });

    for (const id of ids) {
      const answered = await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
      expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    }
    const ended = await until(async () => {
      const records = await Promise.all(ids.map(record));
      return records.every((r) => !['Running', 'Waiting'].includes(r.status)) && records;
    }, 120_000);
    ended.forEach((r: Loose, n: number) => {
      expect(r.status, JSON.stringify(r.result)).toBe('Completed');
      expect(r.result.value).toMatchObject({ n, sent: { to: 'team@example.com', note: n } });
    });
    // Nothing sent twice: each call of each run reached the App once (Idempotency-Key <run>:<index>).
    for (const id of ids)
      for (const index of [0, 1])
        expect(app.deliveries.filter((d) => d.idempotencyKey === `${id}:${index}`)).toHaveLength(1);
    // Released runs replayed from the journal (a second attempt); those that kept their isolate did not.
    const attempts = await Promise.all(ids.map((id) => redis.hget(`islet:run:{${id}}`, 'attempts')));
    expect(attempts.filter((n) => n === '1')).toHaveLength(KEPT);
    expect(attempts.filter((n) => Number(n) >= 2)).toHaveLength(WAITING - KEPT);
    expect(await parked()).toEqual({ kept: 0, released: 0 });
  }, 300_000);
});

describe('a parked run keeps counting its elapsed budget', () => {
  it('unanswered, kept and released runs alike end as the timeout the contract names, with their output', async () => {
    const count = KEPT + 2;
    const ids: string[] = [];
    for (let n = 0; n < count; n++) {
      const submitted = await a('POST', '/v1/runs', {
        style: 'run_code',
        approval: 'hold',
        timeoutMs: 6000,
        code: `console.log("before ${n}"); await apps.mail.send_email({ to: "nobody", n: ${n} }); return "sent"`,
        description: 'Mail after a person allows it',
        sessionId: 'sess-park-timeout',
        connections: [mail.id],
      });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
      ids.push(submitted.body.id as string);
    }
    // Parked: the memory budget's worth with their isolate, the rest released (their isolates ended).
    await until(async () => {
      const p = await parked();
      return p.kept + p.released === count && p;
    }, 60_000);
    expect(await parked()).toEqual({ kept: KEPT, released: count - KEPT });
    const ended = await until(async () => {
      const records = await Promise.all(ids.map(record));
      return records.every((r) => !['Running', 'Waiting'].includes(r.status)) && records;
    }, 60_000);
    ended.forEach((r: Loose, n: number) => {
      expect(r.status).toBe('Failed');
      expect(r.result).toMatchObject({ reason: 'Timeout', kind: 'timeout' });
      expect(r.text).toBe(
        `code run failed (timeout): execution deadline reached (6000ms)\n\nCaptured output:\nbefore ${n}`,
      );
    });
    // Nothing was replayed or sent: one attempt each, no delivery of the held call.
    for (const id of ids) {
      expect(await redis.hget(`islet:run:{${id}}`, 'attempts')).toBe('1');
      expect(app.deliveries.filter((d) => d.idempotencyKey === `${id}:0`)).toHaveLength(0);
    }
    expect(await parked()).toEqual({ kept: 0, released: 0 });
  }, 120_000);
});
