/**
 * `node test/bench/run-fields-cost.ts`: µs to read a run record's fields out of a script's flat
 * answer (`[field, value, …]`, ~25 fields, strings made at run time as ioredis's reply makes them),
 * the way `fromHash(fieldsOf(flat))` did (a record keyed by the answer's own names, then read) against
 * `fromFields`' (a switch on each name into one object of a fixed shape), round 32 `runner-run`. Hot:
 * 2000 in a row; spaced: one every 2 ms after a 20,000-object allocation (caches cold, as a
 * runner's pick-up finds them), p50 and p90 of 150 a round; the sides alternate over 6 rounds.
 * The run store's own `fromHash` and `fromFields`; no crypto: the sealed fields are left out of
 * the answer (their opens are the same on both sides).
 */

import { generateSealKey, sealerFromConfig } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { createRunReads } from '../../services/runs/src/run-reads.ts';

// The run store's own reads: `fromHash` and `fromFields` read no Redis, and with the sealed fields
// (program, request, description, result, text) left out of the answer they open nothing either.
const reads = createRunReads({} as Redis, sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey() }), {
  maxEvents: '100',
  sealEvent: String,
  sealStatus: String,
});

const names = [
  'id',
  'tenant',
  'session',
  'turn',
  'callId',
  'status',
  'mode',
  'createdAt',
  'updatedAt',
  'attempts',
  'cancelRequested',
  'clockMs',
  'seed',
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
const viaRecord = (flat: string[]) => reads.fromHash(fieldsOf(flat))?.id.length ?? 0;
const viaSwitch = (flat: string[]) => reads.fromFields(flat)?.id.length ?? 0;
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
