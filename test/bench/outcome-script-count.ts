/**
 * `node test/bench/outcome-script-count.ts` (round 44, `outcome-group`): Redis's instructions a call
 * in a 100-call run's two journal scripts, counted, not timed (no lock): a private redis-server
 * under callgrind collecting inside script calls only (`evalGenericCommand`, the commands the
 * scripts run included), no AOF, nothing else connected. `RUNS` (default 20) runs of `CALLS`
 * (default 100) calls: the claims in one turn (one script call), then with `COMPLETE=1` the
 * outcomes in one turn (one group, with each call's `call` event as the gateway sends it: a sealed
 * ~330 B event, a sealed `{"ok":true}` outcome). Run it with COMPLETE=0 and COMPLETE=1: the
 * outcome script a call is the difference.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createCallJournal } from '../../services/runs/src/call-journal.ts';
import { createTestSealer } from '../../services/runs/test/test-sealer.ts';

const RUNS = Number(process.env.RUNS ?? 20);
const CALLS = Number(process.env.CALLS ?? 100);
const COMPLETE = process.env.COMPLETE === '1';
const port = 20000 + (process.pid % 20000);
const out = `/tmp/outcome-script-count.${process.pid}`;
const server = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--toggle-collect=evalGenericCommand',
    `--callgrind-out-file=${out}`,
    'redis-server',
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    'no',
  ],
  { stdio: 'ignore' },
);
// redis-server under valgrind takes seconds to listen: a fresh client each try until one answers.
let redis: Redis;
for (;;) {
  const client = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    redis = client;
    break;
  } catch {
    client.disconnect();
    await new Promise((r) => setTimeout(r, 300));
  }
}
const sealer = createTestSealer();
const journal = createCallJournal({ redis, sealer });
const eventText = JSON.stringify({
  index: 0,
  binding: 'ping.ping',
  source: { connectionId: 'c1', connectionName: 'ping', name: 'ping', kind: 'tool' },
  outcome: { type: 'result', valueJson: '{"ok":true}' },
  durationMs: 12.3,
  arguments: { n: 1 },
  at: new Date().toISOString(),
  operationId: '0b1c2d3e-4f50-5617-8a9b-0c1d2e3f4a5b',
});
const source = { connectionId: 'c1', connectionName: 'ping', name: 'ping', kind: 'tool' as const };
for (let r = 0; r < RUNS; r++) {
  const run = `run-${r}-${process.pid}`;
  const streamKey = `islet:run:{${run}}:events`;
  await Promise.all(
    Array.from({ length: CALLS }, (_, i) =>
      journal.claim(run, 1, { index: i, binding: 'ping.ping', argsJson: '{"n":1}', source, sendNow: true }),
    ),
  );
  if (COMPLETE)
    await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        journal.complete(
          run,
          i,
          { type: 'result', valueJson: '{"ok":true}' },
          {
            streamKey,
            maxLen: 10000,
            type: 'call',
            sealedData: sealer.seal(eventText),
            channel: 'islet:run-progress',
            message: `${run} call`,
          },
        ),
      ),
    );
}
await redis.call('SHUTDOWN', 'NOSAVE').catch(() => {});
redis.disconnect();
await new Promise((r) => server.on('exit', r));
const totals =
  readFileSync(out, 'utf8').match(/^totals: (\d+)/m)?.[1] ??
  readFileSync(out, 'utf8').match(/^summary: (\d+)/m)?.[1];
console.log(
  `COMPLETE=${COMPLETE ? 1 : 0} RUNS=${RUNS} CALLS=${CALLS}: ${totals} instructions in script calls, ${(Number(totals) / (RUNS * CALLS) / 1000).toFixed(1)} k a call`,
);
