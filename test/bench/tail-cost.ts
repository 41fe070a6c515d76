/**
 * `node test/bench/tail-cost.ts`: µs per op, in one process, of the CPU a sequential `Prefer: wait`
 * run spends at its two ends in the gateway: the submit's sealing of its record and summary, and
 * the waiter's answer from the pushed end (parse, open, record, serialize). `N` iterations
 * (default 20,000) after as many to warm up; each figure is the median of `ROUNDS` (default 9); before and after
 * alternate round by round.
 */
import { randomBytes } from 'node:crypto';
import { createSealer } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { createRunStore, type StoredRun, usageDay } from '@islet/runs';
import type { Redis } from 'ioredis';
import { memoizeOwnSeals } from '../../services/gateway/src/own-seal-memo.ts';
import { toRecord } from '../../services/gateway/src/record.ts';
import { PROGRAM } from './baselines.ts';

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const keys = { k1: randomBytes(32) };
const gatewaySealer = memoizeOwnSeals(createSealer({ keys, activeKeyId: 'k1' }));
const runnerSealer = createSealer({ keys, activeKeyId: 'k1' });
// Neither the record's reading nor its argument building sends anything.
const store = createRunStore({} as Redis, gatewaySealer);

const now = Date.now();
const run: StoredRun = {
  id: '3f1c0b8e-8a77-4c55-9d0e-2b1f3f1d9a10',
  tenant: 'dev',
  session: 'bench',
  turn: 't',
  callId: 'c',
  principal: 'key:dev-key',
  status: 'Running',
  mode: 'read-only',
  code: PROGRAM,
  description: 'Sequential trivial run',
  request: {
    style: 'run_code',
    limits: { timeoutMs: 30000, memoryMb: 128, outputBytes: 1048576, outputCap: 'shared' },
    connections: [],
    bindings: [],
    approval: 'stop',
    submittedBy: 'dev-key',
  },
  createdAt: now,
  updatedAt: now,
  attempts: 0,
  cancelRequested: false,
  clockMs: now,
  seed: '3f1c0b8e-8a77-4c55-9d0e-2b1f3f1d9a10',
  pushEnd: true,
};
const result = { _tag: 'Completed', value: 12, logs: [], durationMs: 1 };

/** The record as the end pushes it (HGETALL's flat array): the gateway's seals, the runner's end. */
function pushedEnd(): string {
  const flat = [
    ...Object.entries({
      id: run.id,
      tenant: run.tenant,
      session: run.session,
      turn: run.turn,
      callId: run.callId,
      status: 'Completed',
      mode: run.mode,
      code: gatewaySealer.seal(run.code),
      description: gatewaySealer.seal(run.description),
      request: gatewaySealer.seal(JSON.stringify(run.request)),
      createdAt: String(run.createdAt),
      updatedAt: String(now + 5),
      attempts: '1',
      clockMs: String(run.clockMs),
      seed: run.seed,
      principal: run.principal ?? '',
      pushEnd: '1',
      result: runnerSealer.seal(JSON.stringify(result)),
      kind: 'none',
      text: runnerSealer.seal('12'),
      timings: JSON.stringify({
        enqueued: now,
        pickedUp: now + 1,
        engineCalled: now + 2,
        engineReturned: now + 3,
      }),
    }).flat(),
  ];
  return JSON.stringify([flat, []]);
}

function measure(name: string, op: () => unknown): number {
  for (let i = 0; i < N; i++) op();
  const figures: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) op();
    figures.push(Number(process.hrtime.bigint() - t0) / 1000 / N);
  }
  figures.sort((a, b) => a - b);
  const us = figures[Math.floor(ROUNDS / 2)] ?? 0;
  console.log(`${name.padEnd(58)} ${us.toFixed(2).padStart(7)} µs/op`);
  return us;
}

/** Before and after alternated round by round (a machine others load drifts between rounds). */
function pair(before: [string, () => unknown], after: [string, () => unknown]): void {
  for (let i = 0; i < N; i++) {
    before[1]();
    after[1]();
  }
  const figures: [number[], number[]] = [[], []];
  for (let r = 0; r < ROUNDS; r++) {
    [before, after].forEach(([, op], side) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < N; i++) op();
      figures[side]?.push(Number(process.hrtime.bigint() - t0) / 1000 / N);
    });
  }
  [before, after].forEach(([name], side) => {
    const sorted = (figures[side] ?? []).sort((a, b) => a - b);
    const us = sorted[Math.floor(ROUNDS / 2)] ?? 0;
    console.log(`${name.padEnd(66)} ${us.toFixed(2).padStart(7)} µs/op`);
  });
}

const payload = pushedEnd();
let sink: unknown;
export const waiter = {
  parse: () => {
    sink = JSON.parse(payload);
  },
  fromHash: () => {
    const [flat] = JSON.parse(payload) as [unknown, unknown];
    sink = store.fromHash(fieldsOf(flat));
  },
  answer: () => {
    const [flat] = JSON.parse(payload) as [unknown, unknown];
    const ended = store.fromHash(fieldsOf(flat));
    sink = ended && JSON.stringify(toRecord(ended, []));
  },
};
// A record as the runner's attempt start reads it (sealed by the gateway's submit; no end yet).
const started = Object.entries({
  id: run.id,
  tenant: run.tenant,
  session: run.session,
  turn: run.turn,
  callId: run.callId,
  status: 'Running',
  mode: run.mode,
  code: runnerSealer.seal(run.code),
  description: runnerSealer.seal(run.description),
  request: runnerSealer.seal(JSON.stringify(run.request)),
  createdAt: String(run.createdAt),
  updatedAt: String(now),
  attempts: '1',
  clockMs: String(run.clockMs),
  seed: run.seed,
}).reduce<Record<string, string>>((h, [k, v]) => Object.assign(h, { [k]: v }), {});
const runnerStore = createRunStore({} as Redis, runnerSealer);
console.log(`load ${(await import('node:os')).loadavg()[0]?.toFixed(2)}, N ${N}, median of ${ROUNDS}`);
measure('waiter: JSON.parse of the pushed end', waiter.parse);
measure('waiter: parse + fromHash (opens)', waiter.fromHash);
measure('waiter: parse + fromHash + toRecord + JSON.stringify', waiter.answer);
// Before: the description opened with the rest (what reading it at once costs); after: not read.
pair(
  [
    'runner: fromHash at the attempt start, description read (before)',
    () => {
      sink = runnerStore.fromHash(started)?.description;
    },
  ],
  [
    'runner: fromHash at the attempt start, description unread (after)',
    () => {
      sink = runnerStore.fromHash(started);
    },
  ],
);
// The submit's seals: before, the description sealed for the record and again for its summary.
const submitSeals = (descriptionSeals: number) => () => {
  sink = gatewaySealer.seal(run.code);
  for (let i = 0; i < descriptionSeals; i++) sink = gatewaySealer.seal(run.description);
  sink = gatewaySealer.seal(JSON.stringify(run.request));
};
pair(
  ['submit: the record and summary seals, 4 (before)', submitSeals(2)],
  ['submit: the record and summary seals, 3 (after)', submitSeals(1)],
);
// The end's usage day: before, a date formatted at every end; after, the day's name kept.
const formattedDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
pair(
  [
    "runner: the end's usage day, formatted (before)",
    () => {
      sink = formattedDay(Date.now());
    },
  ],
  [
    "runner: the end's usage day, kept (after)",
    () => {
      sink = usageDay(Date.now());
    },
  ],
);
// The same, one call every 5 ms as a sequential run makes it (caches cold between calls).
for (const [name, day] of [
  ['before', formattedDay],
  ['after', usageDay],
] as const) {
  const lat: number[] = [];
  for (let i = 0; i < 200; i++) {
    await new Promise((r) => setTimeout(r, 5));
    const t0 = process.hrtime.bigint();
    sink = day(Date.now());
    lat.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  lat.sort((a, b) => a - b);
  console.log(
    `${`runner: the end's usage day, one call each 5 ms, p50 (${name})`.padEnd(66)} ${(lat[100] ?? 0).toFixed(2).padStart(7)} µs/op`,
  );
}
measure('one seal (a new IV, AES-256-GCM)', () => {
  sink = runnerSealer.seal(run.description);
});
measure('one open (not remembered)', () => {
  sink = runnerSealer.open(runnerSealer.seal(run.description));
});
void sink;
