import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';

const cluster = await startCluster({ gateways: 1, runners: [{ modes: ['read-only'], concurrency: 4 }] });
const a = api(cluster.url, cluster.devKey);
const body = {
  code: 'return 1',
  description: 'x',
  sessionId: 's',
  turnId: 't',
  callId: 'c',
  connections: [],
};
for (let i = 0; i < 5; i++) await a('POST', '/v1/runs', body, { prefer: 'wait=30' });
const mon = createRedis(cluster.redisUrl);
const lines: string[] = [];
const m = await mon.monitor();
m.on('monitor', (time: string, args: string[], source: string) =>
  lines.push(
    `${time} ${source} ${args
      .slice(0, 3)
      .map((x) => String(x).slice(0, 60))
      .join(' ')}`,
  ),
);
await new Promise((r) => setTimeout(r, 300));
lines.push('--- submit');
await a('POST', '/v1/runs', body, { prefer: 'wait=30' });
lines.push('--- done');
await new Promise((r) => setTimeout(r, 300));
m.disconnect();
mon.disconnect();
console.log(lines.join('\n'));
await cluster.stop();
process.exit(0);
