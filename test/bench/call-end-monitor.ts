/**
 * `node test/bench/call-end-monitor.ts`: the Redis commands of one sequential run, MONITOR'd, for
 * three programs on the same cluster (round 39, `call-end`): a trivial run without connections,
 * the same trivial program submitted with a connection (an App named, no call made), and a run
 * of `CALLS` (default 1) sequential calls to an instant App. Top-level commands are listed in
 * order with their first key and their argument bytes (a script's inner commands indented), so
 * what a call-making run adds at its pick-up and end shows beside the trivial run's.
 * `REPEAT` (default 3): runs of each before the one recorded.
 */
import { createRedis } from '@islet/core';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const CALLS = Number(process.env.CALLS ?? 1);
const REPEAT = Number(process.env.REPEAT ?? 3);
const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
const monitor = createRedis(cluster.redisUrl);
try {
  const connection = await pingConnection(a, port);
  const run = async (code: string, withApp: boolean) => {
    await runWithApp(a, code, withApp ? connection : undefined);
  };
  const cases: [string, string, boolean][] = [
    ['trivial', 'return 1', false],
    ['trivial with a connection', 'return 1', true],
    [`${CALLS} call(s)`, sequentialCalls(CALLS), true],
  ];
  const mon = await monitor.monitor();
  let lines: string[] = [];
  mon.on('monitor', (_time: string, args: string[], source: string) => {
    const bytes = args.reduce((s, x) => s + Buffer.byteLength(String(x)), 0);
    const inner = source.startsWith('lua');
    lines.push(
      `${inner ? '    ' : ''}${args[0]} ${String(args[1] ?? '').slice(0, 60)}${inner ? '' : ` (${bytes} B)`}`,
    );
  });
  for (const [name, code, withApp] of cases) {
    for (let i = 0; i < REPEAT; i++) await run(code, withApp);
    await new Promise((r) => setTimeout(r, 300));
    lines = [];
    await run(code, withApp);
    await new Promise((r) => setTimeout(r, 300));
    const own = lines.filter((l) => !/^(ping|info|client|xread|bzpopmin|brpoplpush|blmove)/i.test(l));
    const top = own.filter((l) => !l.startsWith(' '));
    console.log(`\n=== ${name}: ${top.length} top-level commands, ${own.length} with scripts' inner ones`);
    for (const l of own) console.log(l);
  }
  mon.disconnect();
} finally {
  monitor.disconnect();
  await cluster.stop();
  app.close();
}
