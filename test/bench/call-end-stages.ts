/**
 * `node test/bench/call-end-stages.ts` (round 39, `call-end`): a call-making run's start and end
 * against a trivial run's, on one clock (core's `wallNow`, the clock of the runner's stage stamps):
 * the submit and the response stamped here, each App request's arrival and answer stamped here,
 * the runner's stamps read from the record's `timings`. Runs of four programs one after another,
 * `RUNS` each (default 40, p50s printed): the trivial program without and with the App's
 * connection, one call,
 * and `CALLS` sequential calls (default 20). Stages: submit → enqueued (the gateway) → fetched →
 * pickedUp → engineCalled (the runner) → the App's first request (host, runner, gateway, claim)
 * or, trivial, → engineReturned; the App's last answer → engineReturned (outcome, runner, host,
 * program's end) → endSent (the runner after the engine) → the response here (end script, push,
 * the gateway's answer), split where a subscriber here sees the end's push.
 */
import { channels, createRedis, wallNow } from '@islet/core';
import { timingsFrom } from '@islet/runs';
import { api } from '../e2e/helpers.ts';
import { pct, sequentialCalls } from './baselines.ts';
import { pingConnection, startCallCluster, startPingApp } from './ping-app.ts';

// The runner's stage stamps are stored only when asked (round 43 `format-43`).
process.env.ISLET_RUN_STAGE_TIMINGS ??= 'true';
const RUNS = Number(process.env.RUNS ?? 40);
const CALLS = Number(process.env.CALLS ?? 20);
const { app, port } = await startPingApp();
const arrived: number[] = [];
const answered: number[] = [];
app.prependListener('request', (_req, res) => {
  arrived.push(wallNow());
  res.once('finish', () => answered.push(wallNow()));
});
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
const redis = createRedis(cluster.redisUrl);
// The end's push as a subscriber of its own sees it (the gateway's subscriber gets the same PUBLISH):
// splits endSent → response into the runner's end and Redis's script, and the gateway's answer.
const sub = createRedis(cluster.redisUrl);
const pushedAt = new Map<string, number>();
await sub.subscribe(channels.runEvents);
sub.on('message', (_c: string, m: string) => {
  const at = wallNow();
  const space = m.indexOf(' ');
  if (m.startsWith('end', space + 1)) pushedAt.set(m.slice(0, space), at);
});
try {
  const connection = await pingConnection(a, port);
  const run = async (code: string, withApp = true) => {
    arrived.length = 0;
    answered.length = 0;
    const sent = wallNow();
    const res = await a(
      'POST',
      '/v1/runs',
      {
        code,
        description: 'Benchmark binding calls',
        sessionId: 'calls',
        ...(withApp ? { connections: [connection] } : {}),
      },
      { prefer: 'wait=30' },
    );
    const received = wallNow();
    const body = res.body as { status?: string; id?: string };
    if (body.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
    const t = timingsFrom(await redis.hget(`islet:run:{${body.id}}`, 'timings'));
    const pushed = pushedAt.get(body.id ?? '');
    pushedAt.clear();
    return { sent, received, t, first: arrived[0], last: answered.at(-1), pushed };
  };
  const cases: [string, string, boolean][] = [
    ['trivial, no App', 'return 1', false],
    ['trivial (with the connection)', 'return 1', true],
    ['1 call', sequentialCalls(1), true],
    [`${CALLS} calls`, sequentialCalls(CALLS), true],
  ];
  for (const [, code, withApp] of cases) for (let i = 0; i < 10; i++) await run(code, withApp);
  const rows = new Map<string, Map<string, number[]>>();
  // Interleaved, so the box's drift falls on the four alike.
  for (let i = 0; i < RUNS; i++) {
    for (const [name, code, withApp] of cases) {
      const r = await run(code, withApp);
      // A stamp a record lacks reads NaN below, and its stage is left out.
      const t = r.t as Required<typeof r.t>;
      const stages: [string, number | undefined][] = [
        ['submit → enqueued', t.enqueued - r.sent],
        ['enqueued → fetched', t.fetched - t.enqueued],
        ['fetched → pickedUp', t.pickedUp - t.fetched],
        ['pickedUp → engineCalled', t.engineCalled - t.pickedUp],
        ['engineCalled → App 1st request', r.first === undefined ? undefined : r.first - t.engineCalled],
        ['App last answer → engineReturned', r.last === undefined ? undefined : t.engineReturned - r.last],
        ['engineCalled → engineReturned', t.engineReturned - t.engineCalled],
        ['engineReturned → endSent', t.endSent - t.engineReturned],
        ['endSent → response', r.received - t.endSent],
        ['  endSent → the push seen here', r.pushed === undefined ? undefined : r.pushed - t.endSent],
        ['  the push seen here → response', r.pushed === undefined ? undefined : r.received - r.pushed],
        ['whole run', r.received - r.sent],
        [
          'start + end (whole − the App first → last answer)',
          r.received - r.sent - (r.first === undefined ? 0 : r.last! - r.first),
        ],
      ];
      const m = rows.get(name) ?? new Map<string, number[]>();
      for (const [stage, v] of stages)
        if (v !== undefined && Number.isFinite(v)) m.set(stage, [...(m.get(stage) ?? []), v]);
      rows.set(name, m);
    }
  }
  const names = [...rows.keys()];
  const stagesAll = [...(rows.get(names.at(-1)!)?.keys() ?? [])];
  console.log(`p50 ms, ${RUNS} runs each, interleaved | ${names.join(' | ')}`);
  for (const stage of stagesAll) {
    console.log(
      `${stage.padEnd(50)} ${names
        .map((n) => {
          const xs = rows.get(n)?.get(stage);
          return (xs?.length ? pct(xs, 50).toFixed(3) : '—').padStart(9);
        })
        .join(' ')}`,
    );
  }
} finally {
  redis.disconnect();
  sub.disconnect();
  await cluster.stop();
  app.close();
}
