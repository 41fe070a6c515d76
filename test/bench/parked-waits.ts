/**
 * `npm run bench:parked` (part of `npm run bench`): runs waiting for a person hold no runner slot.
 * One gateway, one runner with BENCH_SLOTS slots (default 4), default settings (fair share on).
 * Trivial runs of the same tenant and mode are measured alone, then again while BENCH_WAITING
 * (default 100) run_code runs wait for decisions held in place; then every decision is answered
 * and every run must complete, each App call delivered once.
 *
 * Settings: the defaults, but for the tenant's request rate limit (raised: see below).
 *
 * Rows: slots held per waiting run (goal 0: the busy-slots gauge while only the waiting runs exist,
 * over their count), the parked-runs gauge (kept isolates / released), trivial runs' p50,
 * throughput and the cluster's CPU per run (which load moves far less) with the waits against without (before and after them, same process, same minutes:
 * goal ≈ 1x), and after
 * the answers: completed runs, App calls sent twice (goal 0), time to drain.
 *
 * BENCH_SECONDS (default 3): seconds per throughput measurement.
 */
import { startCluster } from '@islet/devstack';
import { api, type Loose, startAppServer, until } from '../e2e/helpers.ts';
import { cpuMsOfDescendants, pct } from './baselines.ts';
import { leanPost, metricsOf } from './cluster-figures.ts';

/**
 * CPU so far of every process the cluster runs under this one (gateway, runner and its sandbox
 * hosts, redis-server), ms: over an 8-client window, divided by its runs, what a trivial run costs
 * the machine, the waiting runs' own upkeep (timers, heartbeats, kept isolates) included.
 */
const clusterCpuMs = () => Object.values(cpuMsOfDescendants(() => 'all')).reduce((a, b) => a + b, 0);

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 4);
const WAITING = Number(process.env.BENCH_WAITING ?? 100);

async function main(): Promise<void> {
  const cluster = await startCluster({
    gateways: 1,
    runners: [{ modes: ['read-only'], concurrency: SLOTS }],
    // The one tenant sends thousands of requests inside a minute (three 8-client throughput
    // windows of ~100-250 runs/s each, the waiting runs, their decisions, the polls): past the
    // default 1,200 a minute, whose 429s are not what this bench measures.
    env: { ISLET_MAX_IN_FLIGHT_RUNS: String(WAITING + 100), ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
  });
  const app = await startAppServer((d) => ({
    status: 200,
    body: JSON.stringify({ structuredContent: { echo: d.body.arguments } }),
  }));
  try {
    const a = api(cluster.url, cluster.devKey);
    const conn = await a('POST', '/v1/connections', {
      name: 'Ask',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'ping', policy: 'ask' }],
    });
    if (conn.status !== 201) throw new Error(`connection: ${JSON.stringify(conn.body)}`);
    const runner = cluster.runners[0]!.url;
    const gauge = async (name: string, label: string) => {
      // A refused or failed scrape must not read as 0 slots held.
      const text = await metricsOf(runner);
      return [...text.matchAll(new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\d+)`, 'gm'))].reduce(
        (s, m) => s + Number(m[1]),
        0,
      );
    };
    // The cluster bench's load generator (node:http, keep-alive): fetch() would charge the two
    // cores ~0.7 ms of the client's CPU a request, in every window alike but not in what it measures.
    const post = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
    const trivial = async () => {
      const t0 = performance.now();
      const body = (await post({
        code: 'return 1',
        description: 'Return one',
        sessionId: 'bench-parked',
      })) as {
        status?: string;
      };
      if (body?.status !== 'Completed') throw new Error(`trivial run: ${JSON.stringify(body)}`);
      return performance.now() - t0;
    };
    const measure = async () => {
      // Warm from 8 clients at once (a host per slot started, the processes' code compiled), so the
      // first window is not the stack's start-up.
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 10; i++) await trivial();
        }),
      );
      const latencies: number[] = [];
      for (let i = 0; i < 100; i++) latencies.push(await trivial());
      let done = 0;
      const cpu0 = clusterCpuMs();
      const started = performance.now();
      const until = started + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (performance.now() < until) {
            await trivial();
            done++;
          }
        }),
      );
      // Over the window as it ran: the clients finish the runs they began past its nominal end.
      const perSec = done / ((performance.now() - started) / 1000);
      return { p50: pct(latencies, 50), perSec, cpuMsPerRun: (clusterCpuMs() - cpu0) / done };
    };

    const before = await measure();
    const ids: string[] = [];
    for (let n = 0; n < WAITING; n++) {
      const r = await a('POST', '/v1/runs', {
        style: 'run_code',
        approval: 'hold',
        code: `const r = await apps.ask.ping({ n: ${n} }); return r.structuredContent.echo.n`,
        description: 'Ping after a person allows it',
        sessionId: 'bench-parked',
        connections: [conn.body.id],
      });
      if (r.status !== 202) throw new Error(`waiting run: ${JSON.stringify(r.body)}`);
      ids.push(r.body.id);
    }
    const parkedAt = performance.now();
    await until(
      async () => (await gauge('islet_runner_parked_runs', 'mode="read-only"')) === WAITING || undefined,
      600_000,
      200,
    );
    const parkSeconds = (performance.now() - parkedAt) / 1000;
    const busyWhileWaiting = await gauge('islet_runner_slots', 'state="busy"');
    const kept = await gauge('islet_runner_parked_runs', 'isolate="kept"');
    const released = await gauge('islet_runner_parked_runs', 'isolate="released"');
    const during = await measure();

    const answeredAt = performance.now();
    for (const id of ids) {
      const r = await a('POST', `/v1/code-runs/${id}/decisions`, { index: 0, allow: true });
      if (r.status !== 200) throw new Error(`decision: ${JSON.stringify(r.body)}`);
    }
    const records: Loose[] = await until(
      async () => {
        const all = await Promise.all(
          ids.map(async (id) => {
            const r = await a('GET', `/v1/code-runs/${id}`);
            if (r.status !== 200) throw new Error(`run ${id}: ${JSON.stringify(r.body)}`);
            return r.body;
          }),
        );
        return all.every((r) => !['Running', 'Waiting'].includes(r.status)) && all;
      },
      600_000,
      500,
    );
    const drainSeconds = (performance.now() - answeredAt) / 1000;
    // Alone again once they are gone: the first measurement also carried the stack's warm-up, so
    // the baseline is the mean of both (as the cluster bench does with raw isolated-vm).
    const after = await measure();
    const alone = {
      p50: (before.p50 + after.p50) / 2,
      perSec: (before.perSec + after.perSec) / 2,
      cpuMsPerRun: (before.cpuMsPerRun + after.cpuMsPerRun) / 2,
    };
    const right = records.filter((r, n) => r.status === 'Completed' && r.result?.value === n).length;
    const twice = ids.filter(
      (id) => app.deliveries.filter((d) => d.idempotencyKey === `${id}:0`).length !== 1,
    ).length;

    const f = (n: number, d = 2) => n.toFixed(d);
    const rows: [string, string, string, string][] = [
      [
        `runner slots held by runs waiting for a person (${WAITING} waiting, ${SLOTS} slots)`,
        f(busyWhileWaiting / WAITING, 3),
        `${busyWhileWaiting} busy slots`,
        '0 per waiting run',
      ],
      [
        'parked runs: isolate kept / released',
        `${kept} / ${released}`,
        `all parked in ${f(parkSeconds, 1)} s`,
        `${WAITING} parked`,
      ],
      [
        'trivial run p50 while they wait (ms)',
        f(during.p50),
        `${f(during.p50 / alone.p50)}x alone (${f(before.p50)} before, ${f(after.p50)} after)`,
        '≈ 1x',
      ],
      [
        'trivial runs/s (8 clients) while they wait',
        f(during.perSec, 1),
        `${f(during.perSec / alone.perSec)}x alone (${f(before.perSec, 1)}/s before, ${f(after.perSec, 1)}/s after)`,
        '≈ 1x',
      ],
      [
        'CPU per trivial run, cluster processes, while they wait (ms)',
        f(during.cpuMsPerRun),
        `${f(during.cpuMsPerRun / alone.cpuMsPerRun)}x alone (${f(before.cpuMsPerRun)} before, ${f(after.cpuMsPerRun)} after)`,
        "≈ 1x (the waits' own cost; load moves it far less than a rate)",
      ],
      [
        'answered: completed with the right result',
        `${right} / ${WAITING}`,
        `drained in ${f(drainSeconds, 1)} s`,
        `${WAITING}`,
      ],
      ['App calls not delivered exactly once', String(twice), '', '0'],
    ];
    console.log(`\nIslet bench — parked waits, node ${process.version}, ${new Date().toISOString()}`);
    console.log(
      'settings: the defaults but ISLET_RATE_LIMIT_PER_MINUTE=1000000 (default 1200: the one tenant sends thousands of ' +
        `requests a minute, whose 429s are not what this bench measures)${WAITING + 100 !== 200 ? `; ISLET_MAX_IN_FLIGHT_RUNS=${WAITING + 100} (default 200; BENCH_WAITING=${WAITING})` : ''}` +
        `${SLOTS !== 4 ? `; runner slots ${SLOTS} (default 4; BENCH_SLOTS)` : ''}`,
    );
    const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i]!.length), 6));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ');
    console.log(line(['figure', 'value', 'against', 'goal']));
    for (const r of rows) console.log(line(r));
    if (right !== WAITING || twice !== 0) process.exitCode = 1;
  } finally {
    await app.close();
    await cluster.stop();
  }
}

await main();
