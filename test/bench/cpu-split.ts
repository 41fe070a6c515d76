/**
 * `node test/bench/cpu-split.ts`: CPU per trivial run of each process of a local cluster (1
 * gateway, 1 runner with `BENCH_SLOTS` slots, default 4), with the runner apart from its sandbox
 * hosts, which `bench:cluster` reports together. 16 clients (`CLIENTS`) run `WARM` runs (default
 * 96, enough to start every slot's host; a few thousand also let V8 finish compiling the gateway's
 * and runner's hot code, which it still does through the first thousand), then `RUNS` (default
 * 600) are measured from /proc: the runner's own time, its
 * hosts' (live ones, and the ones it reaped), the gateway's and redis-server's. Also prints how
 * many hosts were started during the window (a replacement's start is the hosts' largest cost).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';

const TICKS_PER_SECOND = 100;
const RUNS = Number(process.env.RUNS ?? 600);
const CLIENTS = Number(process.env.CLIENTS ?? 16);
const WARM = Number(process.env.WARM ?? 96);

function times(pid: number | string) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
}

function pids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
const gateway = cluster.gateways[0]?.pid;
const runner = cluster.runners[0]?.pid;

function ticks() {
  const out = { gateway: 0, redis: 0, runner: 0, hosts: 0 };
  for (const pid of pids()) {
    try {
      const t = times(pid);
      if (pid === gateway) out.gateway += t.own + t.reaped;
      else if (pid === runner) {
        out.runner += t.own;
        out.hosts += t.reaped;
      } else if (t.ppid === runner) out.hosts += t.own + t.reaped;
      else if (
        t.ppid === process.pid &&
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server')
      )
        out.redis += t.own;
    } catch {
      // gone meanwhile: a host's time is in the runner's reaped children's
    }
  }
  return out;
}

const hosts = new Set<number>();
const seeHosts = () => {
  for (const pid of pids()) {
    try {
      if (times(pid).ppid === runner) hosts.add(pid);
    } catch {}
  }
};

try {
  const once = trivialRun(cluster, 'CPU split');
  const load = (n: number) => burst(once, n, CLIENTS);
  await load(WARM);
  seeHosts();
  const before = new Set(hosts);
  const watch = setInterval(seeHosts, 50);
  const a = ticks();
  const started = Date.now();
  await load(RUNS);
  const b = ticks();
  clearInterval(watch);
  seeHosts();
  const per = (k: keyof typeof a) => (((b[k] - a[k]) * 1000) / TICKS_PER_SECOND / RUNS).toFixed(2);
  console.log(
    `${RUNS} runs in ${((Date.now() - started) / 1000).toFixed(1)} s; CPU ms/run: gateway ${per('gateway')}, ` +
      `redis ${per('redis')}, runner ${per('runner')}, hosts ${per('hosts')}; ` +
      `hosts started in the window: ${[...hosts].filter((p) => !before.has(p)).length}`,
  );
} finally {
  await cluster.stop();
}
