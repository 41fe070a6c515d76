/**
 * `node test/bench/call-one-seal-parts.ts` (round 44, `outcome-seal`): the seals a binding call's
 * journal steps make on the gateway, each op one call's: the claim's arguments, the complete's
 * outcome, and the `call` event the run store builds for the complete (`RunStore.callEvent`) in its
 * sealed form (`PART=sealed`, the default's) or its one-seal form (`PART=one`, ISLET_CALL_ONE_SEAL:
 * no event data built or sealed), or as core config's default has it (`PART=default`, round 45
 * `seal-on`: the one-seal form since round 45). `PART=event-sealed` / `event-one`: the event alone. Run `N` times
 * (default 2000) after `WARM` (default 30,000: round 43 `seal-floor` found 2,000 leaves the
 * optimising compiler inside the count) in one process, with a sealer that keeps no stock (each
 * seal makes its cipher: the process's whole cost a seal). Counted, not timed:
 * `call-one-seal-parts.sh` takes callgrind's total with N and with N = 0.
 */
import { configSchema, generateSealKey, sealerFromConfig } from '@islet/core';
import type { BindingOutcome } from '@islet/protocol';
import { type CallSource, callEventData, createRunStore } from '@islet/runs';
import type { Redis } from 'ioredis';

const N = Number(process.env.N ?? 2000);
const WARM = Number(process.env.WARM ?? 30_000);
const PART = process.env.PART ?? 'sealed';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
// `default` (round 45 `seal-on`): the call with the event in the form core config's default
// writes (ISLET_CALL_ONE_SEAL unset), as the gateway's create-deps.ts reads it.
const defaultOneSeal = configSchema.shape.ISLET_CALL_ONE_SEAL.parse(undefined) === 'true';
// callEvent sends nothing: the store's connection is never used here.
const store = createRunStore({} as Redis, sealer, {
  eventSealer: sealer,
  callOneSeal: PART === 'one' || PART === 'event-one' || (PART === 'default' && defaultOneSeal),
});
const runId = 'run_01JFZ8K4T1WJ0QX2M3N4P5R6S7';
const source: CallSource = {
  connectionId: 'conn_01JFZ8K4T1WJ',
  connectionName: 'Ping',
  name: 'ping',
  kind: 'tool',
};
const argsJson = JSON.stringify({ i: 12, note: 'hello' });
const args = JSON.parse(argsJson) as unknown;
const outcome: BindingOutcome = { type: 'result', valueJson: '{"pong":12,"note":"hello"}' };
const call = { index: 12, binding: 'ping.ping', argsJson };
const withJournal = PART === 'sealed' || PART === 'one' || PART === 'default';

let sink = 0;
function op(): void {
  const started = process.hrtime.bigint();
  if (withJournal) sink += sealer.seal(argsJson).length;
  const outcomeJson = JSON.stringify(outcome);
  if (withJournal) sink += sealer.seal(outcomeJson).length;
  const event = store.callEvent(runId, () => callEventData(call, source, outcome, started, args), started);
  sink += event.sealedData.length + (event.ms ?? 0);
}

for (let i = 0; i < WARM; i++) op();
const t0 = process.hrtime.bigint();
for (let i = 0; i < N; i++) op();
const ns = Number(process.hrtime.bigint() - t0) / Math.max(1, N);
console.log(`${PART}: ${N} ops, ${ns.toFixed(0)} ns an op (a hint, not a measure); ${sink > 0}`);
