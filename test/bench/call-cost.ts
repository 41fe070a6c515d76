/**
 * `npm run bench:calls`: what one binding call costs on the local cluster, for finding where a
 * call's time goes (the cluster bench gives the round trip; this gives the bill). Runs programs of
 * `CALLS` calls (default 20) to an instant local App, one after another for `BENCH_SECONDS`
 * (default 3), sequential calls or, with `PARALLEL=1`, one `Promise.all` of them, and prints per
 * call: the round trip (against a trivial run's p50), CPU by process (/proc, as the cluster bench's
 * CPU row), the gateway's own serving time (`islet_binding_call_duration_seconds`), Redis commands
 * (INFO commandstats, with their mean server time), and the runner's requests by route (a lone call
 * or a batch). Sequential calls are also read against what a lone call's messages alone cost on
 * this machine (`message-floor.ts`, measured before the cluster starts), and against the same
 * floor with its fsync'd write timed on the cluster's Redis during the calls (a probe every 10 ms).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { cpuMsOfDescendants, measure, parallelCalls, pct, sequentialCalls } from './baselines.ts';
import { messageFloor, probeFsyncDuring } from './message-floor.ts';
import { pingConnection, processKind, runWithApp, startPingApp } from './ping-app.ts';

const CALLS = Number(process.env.CALLS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const PARALLEL = process.env.PARALLEL === '1';

/**
 * User and system CPU (ms) of each live process of the cluster by its own kind (the runner apart
 * from its hosts; hosts that exited are in the runner's reaped children's time, not counted).
 */
const userSystemByKind = (): Map<string, [number, number]> => {
  const out = new Map<string, [number, number]>();
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  // This bench's cluster only (other benches on the machine run processes of the same kinds).
  const ours = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p))
      if (p === process.pid) return true;
    return false;
  };
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || !ours(Number(name))) continue;
    try {
      const kind = processKind(readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' '));
      if (!kind) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const [u, s] = out.get(kind) ?? [0, 0];
      out.set(kind, [u + Number(f[11]) * 10, s + Number(f[12]) * 10]);
      // Each host apart too: the one serving the runs against the pool's idle ones.
      if (kind === 'host') out.set(`host ${name}`, [Number(f[11]) * 10, Number(f[12]) * 10]);
      // The main thread's wake-ups from a wait (voluntary context switches), as `wakeups <kind> <pid>`.
      const status = readFileSync(`/proc/${name}/task/${name}/status`, 'utf8');
      const woken = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      out.set(`wakeups ${kind} ${name}`, [woken, 0]);
    } catch {}
  }
  return out;
};

const kindOf = (cmd: string) =>
  cmd.includes('redis-server') ? 'redis' : cmd.includes('gateway') ? 'gateway' : 'runner + hosts';
const sumOf = (text: string, re: RegExp) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
/** Calls and microseconds per command in `INFO commandstats`. */
const commandStats = (info: string) =>
  new Map(
    [...info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)].map((m) => [
      m[1]!,
      [Number(m[2]), Number(m[3])] as const,
    ]),
  );

// Before the cluster starts, so nothing else runs meanwhile.
const floor = PARALLEL ? undefined : await messageFloor();
const { app, port } = await startPingApp();
// The App's TCP connections opened: a keep-alive pool reused run after run opens none a run.
let appConnections = 0;
app.on('connection', () => appConnections++);
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  // One tenant drives it: no fair share or rate limit in the way (as in the cluster bench).
  env: {
    ISLET_TENANT_POOL_SHARE: '1',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    // E.g. `--perf-basic-prof-only-functions` for a `perf record` of a process (README round 35).
    ...(process.env.CLUSTER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.CLUSTER_NODE_OPTIONS } : {}),
  },
});
const redis = createRedis(cluster.redisUrl);
const a = api(cluster.url, cluster.devKey);
const metrics = async () => (await fetch(`${cluster.url}/metrics`)).text();
const runnerMetrics = async () =>
  (await fetch(`http://127.0.0.1:${cluster.runners[0]!.port}/metrics`)).text();
/** Sandbox hosts replaced, by reason (the runner's `islet_sandbox_process_restarts_total`). */
const restartsOf = (text: string) =>
  new Map(
    [...text.matchAll(/^islet_sandbox_process_restarts_total\{[^}]*reason="([^"]+)"[^}]*\} (\d+)/gm)].map(
      (m) => [m[1]!, Number(m[2])] as const,
    ),
  );
try {
  const connection = await pingConnection(a, port);
  const run = async (code: string) => {
    await runWithApp(a, code, connection);
  };
  const program = PARALLEL ? parallelCalls(CALLS) : sequentialCalls(CALLS);
  for (let i = 0; i < 5; i++) await run(program);
  const trivial = await measure(() => run('return 1'), { seconds: SECONDS / 2, minRuns: 20 });

  const before = {
    restarts: restartsOf(await runnerMetrics()),
    userSystem: userSystemByKind(),
    text: await metrics(),
    cpu: cpuMsOfDescendants(kindOf),
    redis: await redis.info('commandstats'),
  };
  const own = process.cpuUsage();
  const connectionsBefore = appConnections;
  // The floor's fsync'd write timed again during sequential calls (message-floor.ts).
  const probe = PARALLEL ? undefined : probeFsyncDuring(cluster.redisUrl);
  const probeMs = probe?.ms ?? [];
  // Warmed up above: every run measured is inside the before/after snapshots.
  const withCalls = await measure(() => run(program), { seconds: SECONDS, warmup: 0, minRuns: 10 });
  await probe?.stop();
  const connectionsOpened = appConnections - connectionsBefore;
  const ownMs = (({ user, system }) => (user + system) / 1000)(process.cpuUsage(own));
  const after = {
    restarts: restartsOf(await runnerMetrics()),
    userSystem: userSystemByKind(),
    text: await metrics(),
    cpu: cpuMsOfDescendants(kindOf),
    redis: await redis.info('commandstats'),
  };
  const calls = withCalls.runs * CALLS;

  const served = (text: string) => ({
    sum: sumOf(text, /^islet_binding_call_duration_seconds_sum\{[^}]*\} ([\d.e+-]+)/gm),
    count: sumOf(text, /^islet_binding_call_duration_seconds_count\{[^}]*\} ([\d.e+-]+)/gm),
  });
  const route = (text: string, path: string) =>
    sumOf(
      text,
      new RegExp(`^islet_http_request_duration_seconds_count\\{[^}]*route="${path}"[^}]*\\} (\\d+)`, 'gm'),
    );
  const [s0, s1] = [served(before.text), served(after.text)];
  const [r0, r1] = [commandStats(before.redis), commandStats(after.redis)];
  const commands = [...r1]
    .map(
      ([name, [n, usec]]) => [name, n - (r0.get(name)?.[0] ?? 0), usec - (r0.get(name)?.[1] ?? 0)] as const,
    )
    .filter(([name, n]) => n > 0 && name !== 'info' && name !== 'setrange')
    .sort((x, y) => y[1] - x[1]);

  console.log(
    `${CALLS} ${PARALLEL ? 'parallel' : 'sequential'} calls per run, ${withCalls.runs} runs in ${SECONDS} s`,
  );
  console.log(
    `round trip per call: ${((withCalls.p50 - trivial.p50) / (PARALLEL ? 1 : CALLS)).toFixed(3)} ms` +
      ` (${PARALLEL ? 'the whole Promise.all' : 'one call'}; run p50 ${withCalls.p50.toFixed(2)} ms, trivial ${trivial.p50.toFixed(2)} ms)`,
  );
  if (floor) {
    const perCall = (withCalls.p50 - trivial.p50) / CALLS;
    console.log(
      `a lone call's messages alone: ${floor.callMs.toFixed(3)} ms (2 TCP round trips of ${floor.tcpMs.toFixed(3)}, ` +
        `2 fsync'd writes of ${floor.fsyncWriteMs.toFixed(3)}, a pipe round trip of ${floor.pipeMs.toFixed(3)}); ` +
        `the round trip is ${(perCall / floor.callMs).toFixed(2)}x that`,
    );
    const fsyncNow = pct(probeMs, 50);
    const floorNow = 2 * floor.tcpMs + 2 * fsyncNow + floor.pipeMs;
    console.log(
      `an fsync'd write on the cluster's Redis while the calls ran: p50 ${fsyncNow.toFixed(3)} ms (${probeMs.length} probes); ` +
        `the floor with it: ${floorNow.toFixed(3)} ms, the round trip is ${(perCall / floorNow).toFixed(2)}x that`,
    );
  }
  const cpu = Object.entries(after.cpu).map(
    ([kind, ms]) => `${kind} ${((ms - (before.cpu[kind] ?? 0)) / calls).toFixed(3)}`,
  );
  console.log(
    `CPU per call, ms: ${cpu.join(', ')}, this process (client and App) ${(ownMs / calls).toFixed(3)}`,
  );
  console.log(
    `gateway serving a call (claim → App → complete), mean: ${(((s1.sum - s0.sum) / (s1.count - s0.count)) * 1000).toFixed(3)} ms`,
  );
  console.log(
    `Redis commands per call: ${(commands.reduce((s, [, n]) => s + n, 0) / calls).toFixed(1)}; ` +
      commands
        .slice(0, 8)
        .map(([name, n, usec]) => `${name} ${(n / calls).toFixed(2)} (${(usec / n).toFixed(1)} µs)`)
        .join(', '),
  );
  const alone =
    route(after.text, '/internal/v1/code-runs/:id/calls') -
    route(before.text, '/internal/v1/code-runs/:id/calls');
  const batches =
    route(after.text, '/internal/v1/code-runs/:id/call-batch') -
    route(before.text, '/internal/v1/code-runs/:id/call-batch');
  console.log(
    `runner requests per run: ${(alone / withCalls.runs).toFixed(1)} lone calls, ${(batches / withCalls.runs).toFixed(1)} batches`,
  );
  const evalsha = (r1.get('evalsha')?.[0] ?? 0) - (r0.get('evalsha')?.[0] ?? 0);
  console.log(
    `script calls (EVALSHA) per run: ${(evalsha / withCalls.runs).toFixed(2)}; App connections opened per run: ${(connectionsOpened / withCalls.runs).toFixed(2)}`,
  );
  const restarts = [...after.restarts].map(
    ([reason, n]) => `${reason} ${n - (before.restarts.get(reason) ?? 0)}`,
  );
  // Over the processes alive at both ends only: a host replaced meanwhile is in neither sum.
  const delta = (kind: string) => {
    let sum = 0;
    for (const [key, [n]] of after.userSystem) {
      const was = before.userSystem.get(key);
      if (key.startsWith(`wakeups ${kind} `) && was) sum += n - was[0];
    }
    return sum;
  };
  console.log(
    `main-thread wake-ups per call: ${['gateway', 'runner', 'host', 'redis'].map((k) => `${k} ${(delta(k) / calls).toFixed(2)}`).join(', ')}`,
  );
  const split = [...after.userSystem]
    .filter(([kind]) => !kind.startsWith('wakeups'))
    .map(([kind, [u, s]]) => {
      const [u0, s0] = before.userSystem.get(kind) ?? [0, 0];
      return `${kind} ${((u - u0) / calls).toFixed(3)} / ${((s - s0) / calls).toFixed(3)}`;
    });
  console.log(`CPU per call by process, user / system ms: ${split.join(', ')}`);
  console.log(`sandbox hosts replaced in ${withCalls.runs} runs: ${restarts.join(', ') || 'none'}`);
} finally {
  redis.disconnect();
  await cluster.stop();
  app.close();
}
