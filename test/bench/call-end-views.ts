/**
 * `node test/bench/call-end-views.ts` (round 39, `call-end`): the waiter's reading of a call-making
 * run's pushed journal (`callsOf`, call-journal.ts), this tree's against `BASE`'s (default b6d8ba9;
 * its call-journal.ts put beside this one for the process), in one process: a journal of `CALLS`
 * calls (default 20) of one binding journaled on a fresh Redis, read back flat as the end's push
 * carries it, then `N` reads (default 2,000) a round in `ROUNDS` alternated rounds (default 10):
 * JSON.parse calls a read (counted: a count), and CPU µs a read (a time: under the bench lock).
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRedis } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { startRedis } from '@islet/testkit';
import { createCallJournal } from '../../services/runs/src/call-journal.ts';
import { createTestSealer } from '../../services/runs/test/test-sealer.ts';

const BASE = process.env.BASE ?? 'b6d8ba9';
const CALLS = Number(process.env.CALLS ?? 20);
const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const basePath = fileURLToPath(new URL('../../services/runs/src/call-journal-base.tmp.ts', import.meta.url));
writeFileSync(basePath, execFileSync('git', ['show', `${BASE}:services/runs/src/call-journal.ts`]));
const server = await startRedis({ appendOnly: false });
const redis = createRedis(server.url);
try {
  const base = (await import(basePath)) as { createCallJournal: typeof createCallJournal };
  const sealer = createTestSealer();
  const head = createCallJournal({ redis, sealer });
  const old = base.createCallJournal({ redis, sealer });
  const run = 'bench-views-run';
  const source = {
    connectionId: 'conn-7c3b52c0075e',
    connectionName: 'Bench',
    name: 'ping',
    kind: 'tool' as const,
  };
  for (let i = 0; i < CALLS; i++) {
    await head.claim(run, 1, {
      index: i,
      binding: 'bench.ping',
      argsJson: `{"i":${i}}`,
      source,
      sendNow: true,
    });
    await head.complete(run, i, { type: 'result', valueJson: '{"ok":true}' });
  }
  const flat = (await redis.call('HGETALL', `islet:journal:{${run}}`)) as string[];
  const parse = JSON.parse;
  let parses = 0;
  const counted = (j: typeof head) => {
    parses = 0;
    JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
      parses++;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    try {
      j.callsOf(fieldsOf(flat));
    } finally {
      JSON.parse = parse;
    }
    return parses;
  };
  console.log(
    `JSON.parse calls a read of ${CALLS} calls' journal: base ${counted(old)}, head ${counted(head)}`,
  );
  const cpuUs = (j: typeof head) => {
    const t = process.cpuUsage();
    for (let i = 0; i < N; i++) j.callsOf(fieldsOf(flat));
    const d = process.cpuUsage(t);
    return (d.user + d.system) / N;
  };
  for (let i = 0; i < 3; i++) {
    cpuUs(old);
    cpuUs(head);
  }
  const rows: string[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const [b1, h1, h2, b2] = [cpuUs(old), cpuUs(head), cpuUs(head), cpuUs(old)];
    rows.push(
      `round ${r + 1}: base ${b1.toFixed(2)} / head ${h1.toFixed(2)} / head ${h2.toFixed(2)} / base ${b2.toFixed(2)} µs a read`,
    );
  }
  for (const row of rows) console.log(row);
} finally {
  rmSync(basePath, { force: true });
  redis.disconnect();
  await server.stop();
}
