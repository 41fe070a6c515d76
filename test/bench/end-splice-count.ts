/**
 * `node --single-threaded test/bench/end-splice-count.ts`, for callgrind (`end-splice-count.sh`): the
 * instructions of a waited submit's answer body from its pushed end's `ended`, counted not timed
 * (round 51, `gateway-end`). An op: the `ended` opened (a fresh copy of its text, as a push gives
 * it), its record built (`toRecord`, no calls) and its body made:
 * - `SIDE=whole` (the previous release's): `openEnded` as before, `JSON.stringify(record)`;
 * - `SIDE=splice` (this tree's): `openEnded` keeping the result's text, `recordJson` splicing it.
 * `RESULT`: `trivial` (`{ ok: true }`, no logs), `logs` (40 printed lines and a small object), or
 * `large` (a 20,000-character string: near the largest end a push carries). `WARM` ops first (default
 * 3000), then `N`. Both sides check their body against the other's before counting.
 */

import { createSealer } from '../../services/core/src/sealer.ts';
import { recordJson, toRecord } from '../../services/gateway/src/record.ts';
import type { RunResult } from '../../services/protocol/src/index.ts';
import type { StoredRun } from '../../services/runs/src/index.ts';
import { openEnded, openedResultJson, sealEnded } from '../../services/runs/src/sealed-fields.ts';
import { BENCH_RUN_ID, benchStoredRun } from './bench-stored-run.ts';

const N = Number(process.env.N ?? 0);
const WARM = Number(process.env.WARM ?? 3000);
const SIDE = process.env.SIDE ?? 'splice';
const RESULT = process.env.RESULT ?? 'trivial';

const sealer = createSealer({
  keys: { k1: Buffer.alloc(32, 7) },
  activeKeyId: 'k1',
  ready: 64,
  restockBelow: 40,
});
const logs = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ level: 'log' as const, text: `line ${i}: ok` }));
const results: Record<string, RunResult> = {
  trivial: { _tag: 'Completed', value: { ok: true }, logs: [] },
  logs: { _tag: 'Completed', value: { rows: 40, sum: 820.5, tag: 'done' }, logs: logs(40) },
  large: { _tag: 'Completed', value: 'x'.repeat(20_000), logs: [] },
};
const result = results[RESULT];
if (!result) throw new Error(`RESULT: one of ${Object.keys(results).join(', ')}`);
const id = BENCH_RUN_ID;
const text =
  result._tag === 'Completed'
    ? [
        ...result.logs.map((l) => l.text),
        typeof result.value === 'string' ? result.value : JSON.stringify(result.value),
      ].join('\n')
    : '';
const sealed = sealEnded(sealer, id, { result, text, textIsResult: true });
const run = benchStoredRun();

function body(side: string, i: number): string {
  // A fresh copy of the sealed text, as each push's parse makes one.
  const copy = (sealed + String(i % 10)).slice(0, -1);
  const ended = openEnded(sealer, id, copy, side === 'splice');
  const r = { ...run, result: ended.result, text: ended.text } as StoredRun;
  const record = toRecord(r, []);
  if (side === 'whole') return JSON.stringify(record);
  // As the route: a result under RESULT_JSON_KEEP_MIN_CHARS is not kept, its record stringified.
  const json = openedResultJson(ended.result);
  return json === undefined ? JSON.stringify(record) : recordJson(record, json);
}

if (body('whole', 0) !== body('splice', 0)) throw new Error('the two bodies differ');
let sink = 0;
for (let i = 0; i < WARM; i++) sink += body(SIDE, i).length;
for (let i = 0; i < N; i++) sink += body(SIDE, i).length;
if (sink === 0) console.log('');
