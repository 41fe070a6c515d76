/**
 * From a binding call's seals to its script call's write, in the gateway's own terms: the real
 * sealer (3 ciphers kept ready, as `create-deps.ts`) and the real turn batch (`turn-batch.ts`, whose
 * `send` is where the journal writes its `EVALSHA`). Each of `N` cycles dirties the caches (a sort,
 * as a gateway's other work between calls does), then does what a call's two journal steps do
 * before their write: the claim seals the arguments, the complete seals the event and the outcome;
 * each step hands its item to the batch, and the time until `send` runs is the step's gap. Between
 * the steps and between cycles the process waits (setTimeout 1 ms) as the gateway waits for Redis
 * and the App. Prints each step's gap, µs, at p10, p25 and p50: a loaded machine's descheduling
 * only adds to a gap, so the low percentiles are the step's own work.
 *
 *   node test/bench/seal-write-gap.ts     (N 2000)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createSealer, generateSealKey, parseSealKeys } from '@islet/core';
import { TurnBatch } from '../../services/runs/src/turn-batch.ts';

const N = Number(process.env.N ?? 2000);
const sealer = createSealer({ keys: parseSealKeys(generateSealKey('k1')), activeKeyId: 'k1', ready: 3 });
let sentAt = 0n;
const batch = new TurnBatch<string, string>(
  async (_key, items) => {
    sentAt = process.hrtime.bigint();
    return items;
  },
  { maxItems: 128, maxBytes: 4 * 1024 * 1024 },
);
const junk = Array.from({ length: 20_000 }, () => Math.random());
const dirty = () => [...junk].sort((a, b) => a - b)[0];

const claimGaps: number[] = [];
const completeGaps: number[] = [];
const args = JSON.stringify({ text: 'ping', n: 1 });
for (let i = 0; i < N; i++) {
  dirty();
  let t0 = process.hrtime.bigint();
  const sealedArgs = sealer.seal(args);
  await batch.add('journal', sealedArgs, sealedArgs.length);
  if (i >= 100) claimGaps.push(Number(sentAt - t0) / 1000);
  await sleep(1);
  dirty();
  t0 = process.hrtime.bigint();
  sealer.seal(JSON.stringify({ index: i, binding: 'ping.ping', outcome: { _tag: 'Done' }, durationMs: 1 }));
  const sealedOutcome = sealer.seal(JSON.stringify({ type: 'result', valueJson: '{"pong":true}' }));
  await batch.add('journal', sealedOutcome, sealedOutcome.length);
  if (i >= 100) completeGaps.push(Number(sentAt - t0) / 1000);
  await sleep(1);
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)] ?? 0;
const line = (name: string, xs: number[]) =>
  `${name}: p10 ${pct(xs, 0.1).toFixed(1)}, p25 ${pct(xs, 0.25).toFixed(1)}, p50 ${pct(xs, 0.5).toFixed(1)} µs`;
console.log(`${N - 100} cycles`);
console.log(line('claim (1 seal) → its script call sent', claimGaps));
console.log(line('complete (2 seals) → its script call sent', completeGaps));
