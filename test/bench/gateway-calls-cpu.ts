/**
 * `node test/bench/gateway-calls-cpu.ts`: the gateway's side of a binding call, alone: what serving
 * the runner's calls costs the gateway process, from its own CPU time (`/proc/<pid>/stat`) and its
 * syscalls (`/proc/<pid>/io` `syscr`/`syscw`, when readable), per call. A local cluster with one
 * gateway and no runner (the run stays queued, so nothing else runs on the gateway); this process
 * plays the runner with the runner's real gateway client (`services/runner/src/gateway-client.ts`,
 * its default transport, to the gateway's internal port) and the App (an instant loopback App,
 * `ping-app.ts`). Each call is a real one: claim in the journal, the App's signed request, the
 * outcome journaled with its `call` event. Prints per call, for `N` (default 2000) lone calls one
 * after another and `BATCHES` (default 20) `Promise.all`s of 100: the gateway's CPU µs, its read and
 * write syscalls, this process's CPU µs (client and App) and the wall time.
 *
 *   node test/bench/gateway-calls-cpu.ts            (N 2000, BATCHES 20)
 */
import { readFileSync } from 'node:fs';
import { startCluster } from '@islet/devstack';
import { createGatewayClient } from '../../services/runner/src/gateway-client.ts';
import { api } from '../e2e/helpers.ts';
import { pingConnection, startPingApp } from './ping-app.ts';

const N = Number(process.env.N ?? 2000);
const BATCHES = Number(process.env.BATCHES ?? 20);
/** Calls a run takes before the next run (a journal and an event stream each, kept small). */
const PER_RUN = 1000;
/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ). */
const TICKS = 100;

const cpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
};
/** Read and write syscalls so far, or undefined (a non-dumpable process's io is root's to read). */
const syscalls = (pid: number): { r: number; w: number } | undefined => {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1]);
    return { r: field('syscr'), w: field('syscw') };
  } catch {
    return undefined;
  }
};
const ownCpuUs = () => (({ user, system }) => user + system)(process.cpuUsage());

const { app, port } = await startPingApp();
const cluster = await startCluster({
  gateways: 1,
  runners: [],
  env: { ISLET_TENANT_POOL_SHARE: '1', ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
try {
  const gateway = cluster.gateways[0]!;
  const pid = gateway.pid!;
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  const client = createGatewayClient({
    urls: [gateway.internalUrl!],
    token: cluster.env.ISLET_INTERNAL_TOKEN!,
    maxTries: 1,
  });
  let runId = '';
  let index = 0;
  const nextRun = async () => {
    const res = await a('POST', '/v1/runs', {
      code: 'return 1',
      description: 'Benchmark the gateway serving calls',
      sessionId: 'gw-calls',
      connections: [connection],
    });
    runId = (res.body as { id: string }).id;
    if (!runId) throw new Error(`no run: ${JSON.stringify(res.body)}`);
    index = 0;
  };
  const call = async () => {
    if (index >= PER_RUN) await nextRun();
    const live = await client.call(runId, 1, {
      index: index++,
      binding: 'bench.ping',
      argsJson: '{"i":1}',
    });
    if (live.outcome.type !== 'result') throw new Error(`call ended ${JSON.stringify(live.outcome)}`);
  };
  const measure = async (label: string, calls: number, body: () => Promise<void>) => {
    await nextRun();
    const cpu0 = cpuMs(pid);
    const io0 = syscalls(pid);
    const own0 = ownCpuUs();
    const t0 = performance.now();
    await body();
    const wall = performance.now() - t0;
    const own = ownCpuUs() - own0;
    const cpu = cpuMs(pid) - cpu0;
    const io1 = syscalls(pid);
    const io =
      io0 && io1
        ? `, syscalls ${((io1.r - io0.r) / calls).toFixed(2)} reads + ${((io1.w - io0.w) / calls).toFixed(2)} writes`
        : ', syscalls not readable';
    console.log(
      `${label}: ${calls} calls, gateway CPU ${((cpu * 1000) / calls).toFixed(1)} µs a call${io}; ` +
        `this process (client + App) ${(own / calls).toFixed(1)} µs; wall ${((wall * 1000) / calls).toFixed(1)} µs a call`,
    );
  };
  // Warm-up: the gateway compiles its hot code and fills its caches (run, connection).
  await measure('warm-up, lone', 600, async () => {
    for (let i = 0; i < 600; i++) await call();
  });
  await measure('warm-up, batches', 500, async () => {
    for (let b = 0; b < 5; b++) await Promise.all(Array.from({ length: 100 }, call));
  });
  await measure('lone calls', N, async () => {
    for (let i = 0; i < N; i++) await call();
  });
  await measure('100-call batches', BATCHES * 100, async () => {
    for (let b = 0; b < BATCHES; b++) {
      if (index + 100 > PER_RUN) await nextRun();
      await Promise.all(Array.from({ length: 100 }, call));
    }
  });
} finally {
  await cluster.stop();
  app.close();
}
