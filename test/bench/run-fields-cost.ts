/**
 * `node test/bench/run-fields-cost.ts`: µs to read a run record's fields out of a script's flat
 * answer (`[field, value, …]`, ~25 fields, strings made at run time as ioredis's reply makes them),
 * the way `fromHash(fieldsOf(flat))` did (a record keyed by the answer's own names, then read) against
 * `fromFields`' (a switch on each name into one object of a fixed shape), round 32 `runner-run`. Hot:
 * 2000 in a row; spaced: one every 2 ms after a 20,000-object allocation (caches cold, as a
 * runner's pick-up finds them), p50 and p90 of 150 a round; the sides alternate over 6 rounds.
 * No crypto: the opens are the same on both sides.
 */
import { fieldsOf } from '@islet/core/lua-script';

const names = [
  'id',
  'tenant',
  'session',
  'turn',
  'callId',
  'status',
  'mode',
  'code',
  'request',
  'createdAt',
  'updatedAt',
  'attempts',
  'cancelRequested',
  'clockMs',
  'seed',
  'description',
  'kind',
  'principal',
  'reason',
  'style',
  'connections',
  'idempotency',
  'lease',
  'jobId',
  'attemptsStarted',
  'timeoutMs',
];
// Strings made at run time (not the source's internalized literals), as a reply's are.
const answer = () =>
  names.flatMap((n) => [Buffer.from(n).toString(), Buffer.from(`v-${n}-${Math.random()}`).toString()]);
type Fields = Partial<Record<string, string>>;
// What fromHash reads of them.
const use = (h: Fields) =>
  (h.id?.length ?? 0) +
  (h.tenant?.length ?? 0) +
  (h.code?.length ?? 0) +
  (h.request?.length ?? 0) +
  (h.status?.length ?? 0) +
  (h.seed?.length ?? 0) +
  (h.result ? 1 : 0) +
  (h.text ? 1 : 0) +
  (h.textRef ? 1 : 0) +
  (h.pushEnd ? 1 : 0) +
  (h.description?.length ?? 0) +
  (h.createdAt?.length ?? 0) +
  (h.clockMs?.length ?? 0);
const viaRecord = (flat: string[]) => use(fieldsOf(flat));
const viaSwitch = (flat: string[]) => {
  const h: Fields = {
    id: undefined,
    tenant: undefined,
    session: undefined,
    turn: undefined,
    callId: undefined,
    status: undefined,
    mode: undefined,
    code: undefined,
    request: undefined,
    createdAt: undefined,
    updatedAt: undefined,
    attempts: undefined,
    cancelRequested: undefined,
    clockMs: undefined,
    seed: undefined,
    result: undefined,
    text: undefined,
    textRef: undefined,
    kind: undefined,
    principal: undefined,
    pushEnd: undefined,
    description: undefined,
  };
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const v = flat[i + 1];
    // prettier-ignore
    switch (flat[i]) {
      case 'id':
        h.id = v;
        break;
      case 'tenant':
        h.tenant = v;
        break;
      case 'session':
        h.session = v;
        break;
      case 'turn':
        h.turn = v;
        break;
      case 'callId':
        h.callId = v;
        break;
      case 'status':
        h.status = v;
        break;
      case 'mode':
        h.mode = v;
        break;
      case 'code':
        h.code = v;
        break;
      case 'request':
        h.request = v;
        break;
      case 'createdAt':
        h.createdAt = v;
        break;
      case 'updatedAt':
        h.updatedAt = v;
        break;
      case 'attempts':
        h.attempts = v;
        break;
      case 'cancelRequested':
        h.cancelRequested = v;
        break;
      case 'clockMs':
        h.clockMs = v;
        break;
      case 'seed':
        h.seed = v;
        break;
      case 'result':
        h.result = v;
        break;
      case 'text':
        h.text = v;
        break;
      case 'textRef':
        h.textRef = v;
        break;
      case 'kind':
        h.kind = v;
        break;
      case 'principal':
        h.principal = v;
        break;
      case 'pushEnd':
        h.pushEnd = v;
        break;
      case 'description':
        h.description = v;
        break;
    }
  }
  return use(h);
};
const sides: [string, (flat: string[]) => number][] = [
  ['a record, then read (fieldsOf)', viaRecord],
  ['a switch into a fixed shape', viaSwitch],
];
const at = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * q)]!;
const hot = new Map<string, number[]>();
const spaced = new Map<string, number[]>();
let sink = 0;
for (let round = 0; round < 6; round++)
  for (const [name, read] of round % 2 ? [...sides].reverse() : sides) {
    const many = Array.from({ length: 2000 }, answer);
    let t = process.hrtime.bigint();
    for (const flat of many) sink += read(flat);
    hot.set(name, [...(hot.get(name) ?? []), Number(process.hrtime.bigint() - t) / 1000 / many.length]);
    const each: number[] = [];
    for (let i = 0; i < 150; i++) {
      const flat = answer();
      sink += Array.from({ length: 20_000 }, (_, j) => ({ j, s: `x${j}` })).length;
      await new Promise((r) => setTimeout(r, 2));
      t = process.hrtime.bigint();
      sink += read(flat);
      each.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    spaced.set(name, [...(spaced.get(name) ?? []), ...each]);
  }
for (const [name] of sides)
  console.log(
    `${name.padEnd(32)} hot ${at(hot.get(name)!, 0.5).toFixed(2)} µs; spaced p50 ${at(spaced.get(name)!, 0.5).toFixed(1)} p90 ${at(spaced.get(name)!, 0.9).toFixed(1)} µs`,
  );
if (sink < 0) console.log(sink);
