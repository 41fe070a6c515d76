// Bench only (round 40 `end-turn`): `node test/bench/end-read.mjs <mode> <n> [format]` under
// `valgrind --tool=callgrind` (node `--single-threaded`), n = 1000 and 6000; the difference ÷ 5000
// is one warm iteration's instructions. The gateway's read of a waited run's pushed end and its
// answer's body, as `runs-service.ts` `endOf` and the route do it, on the gateway's own-seal memo
// (the submit's program, request and description sealed through it, so they open from memory) and
// the end's fields sealed by another sealer (the runner's): `format` 1 or 2 (default 2). Modes:
//   read        the push parsed, `fromFields(flat, true)`: every sealed field opened or read from memory
//   known       the same with the submit's run in hand (`fromFields(flat, true, known)`)
//   answer      `read`, then the record (`toRecord`) and its JSON (fastify's default serializer)
//   answerknown `known`, then the same
//   recordasync the record as the route built it before: the journal as a promise in a WeakMap, an
//               async call awaiting it (one iteration awaits its record)
//   recordsync  `recordInHand`: the journal array from a WeakMap, the record built at once
//   lean        round 41 `push-lean`: the lean push (`end2`: only END_PUSH_FIELDS) parsed,
//               `fromLeanEnd(flat, known)` (the submit's fields from the run in hand); compare `known`
//   leananswer  `lean`, then the record and its JSON; compare `answerknown`
import { createSealer } from '../../services/core/src/sealer.ts';
import { memoizeOwnSeals } from '../../services/gateway/src/own-seal-memo.ts';
import { toRecord } from '../../services/gateway/src/record.ts';
import { createRunReads, END_PUSH_FIELDS } from '../../services/runs/src/run-reads.ts';
import { endFields, recordFields } from '../../services/runs/src/run-store-args.ts';

const [mode, nText, format = '2'] = process.argv.slice(2);
const n = Number(nText);
const keys = { k1: Buffer.alloc(32, 3) };
const gateway = memoizeOwnSeals(createSealer({ keys, activeKeyId: 'k1' }));
const runner = createSealer({ keys, activeKeyId: 'k1' });
const seal = (s) => (v) => s.seal(JSON.stringify(v));
const id = '0b6f3c1e-8a4d-4f0e-9c2b-7d5e6f7a8b9c';
const run = {
  id,
  tenant: 'acme',
  session: 'bench-session-1',
  turn: 't1',
  callId: 'c1',
  status: 'Running',
  mode: 'default',
  code: `export default async () => { return ${'1 + '.repeat(40)}1; }`,
  description: 'Return the number one',
  request: {
    style: 'run_code',
    limits: { memoryMb: 64, timeoutMs: 30000 },
    connections: [],
    bindings: [],
    submittedBy: 'key_0123456789abcdef',
  },
  createdAt: 1765000000000,
  updatedAt: 1765000000000,
  attempts: 0,
  cancelRequested: false,
  clockMs: 1765000000000,
  seed: id,
  pushEnd: true,
};
const fields = {
  ...recordFields(run, gateway, seal(gateway), gateway.seal(run.description), format),
  ...endFields(
    run,
    {
      status: 'Completed',
      result: { _tag: 'Completed', value: 41, logs: [{ level: 'log', text: 'hello' }] },
      text: 'hello\n41',
      kind: 'none',
    },
    runner,
    seal(runner),
    format,
  ),
  attempts: '1',
  updatedAt: '1765000000123',
};
const payload = JSON.stringify([Object.entries(fields).flat(), []]);
// The lean push's record: the same fields, less those the submit wrote (includes/transition.lua).
const leanPayload = JSON.stringify([
  Object.entries(fields)
    .filter(([name]) => END_PUSH_FIELDS.includes(name))
    .flat(),
  [],
]);
const reads = createRunReads(undefined, gateway, {
  maxEvents: '1000',
  sealEvent: String,
  sealStatus: String,
});
const readOf = (known) => reads.fromFields(JSON.parse(payload)[0], true, known);
const leanOf = () => reads.fromLeanEnd(JSON.parse(leanPayload)[0], run);
const withPromise = new WeakMap();
const inHand = new WeakMap();
const ended = readOf();
const record = async (r) => toRecord(r, await withPromise.get(r));
const modes = {
  read: () => readOf().code.length,
  known: () => readOf(run).code.length,
  answer: () => JSON.stringify(toRecord(readOf(), [])).length,
  answerknown: () => JSON.stringify(toRecord(readOf(run), [])).length,
  lean: () => leanOf().code.length,
  leananswer: () => JSON.stringify(toRecord(leanOf(), [])).length,
  recordasync: async () => {
    withPromise.set(ended, Promise.resolve([]));
    return (await record(ended)).calls.length;
  },
  recordsync: () => {
    inHand.set(ended, []);
    const calls = inHand.get(ended);
    return (calls && toRecord(ended, calls)).calls.length;
  },
};
const f = modes[mode];
if (!f) throw new Error(`mode: ${Object.keys(modes).join(' | ')}`);
// The two reads answer the same body (the bench's own check).
if (JSON.stringify(toRecord(readOf(), [])) !== JSON.stringify(toRecord(readOf(run), [])))
  throw new Error('the known read answers other bytes');
if (JSON.stringify(toRecord(readOf(), [])) !== JSON.stringify(toRecord(leanOf(), [])))
  throw new Error('the lean read answers other bytes');
let sum = 0;
for (let i = 0; i < n; i++) {
  const r = f();
  sum += typeof r === 'number' ? r : await r;
}
console.log(mode, format, n, sum, (mode.startsWith('lean') ? leanPayload : payload).length);
