/**
 * `node test/bench/handed-decode-cost.ts`: the runner's read of a hand-off (its key's member,
 * `cmsgpack.pack({token, answer})`, 1.4 KB as a trivial run's hand-off is) by handed-decode.ts
 * against the read before round 30 (msgpackr's `unpack`, then a walk turning the Lua value into
 * Redis's answer of it), on a member a real redis-server's cmsgpack packed. Warm: a hot loop of `N`.
 * Cold: one read after each sleep of `GAP_MS` (default 5; a sequential run's pick-up comes after the
 * runner slept that long), `SAMPLES` a side (default 400), the two alternating: the cost the
 * pick-up pays, each step of its JavaScript running from caches the other processes emptied.
 * Round 35 (`runner-js`): the rounds 30–34 read (`handed-decode-r30.ts`) is a third side.
 */
import { createRedis } from '@islet/core';
import { startRedis } from '@islet/testkit';
import { unpack } from 'msgpackr';
import { decodeLuaValue } from '../../services/runner/src/handed-decode.ts';
import { asReply } from '../../services/runner/test/handed-reference.ts';
import { decodeLuaValue as decodeR30 } from './handed-decode-r30.ts';

const N = Number(process.env.N ?? 50_000);
const GAP_MS = Number(process.env.GAP_MS ?? 5);
const SAMPLES = Number(process.env.SAMPLES ?? 400);

const before = (b: Buffer) => {
  const [token, answer] = unpack(b) as [unknown, unknown];
  return { token: String(asReply(token)), answer: asReply(answer) };
};
const r30 = (b: Buffer) => {
  const [token, answer] = decodeR30(b) as [unknown, unknown];
  return { token: String(token ?? null), answer: answer ?? null };
};
const now = (b: Buffer) => {
  const [token, answer] = decodeLuaValue(b) as [unknown, unknown];
  return { token: String(token ?? null), answer: answer ?? null };
};

const server = await startRedis({ appendOnly: false });
const redis = createRedis(server.url);
try {
  const id = '2e170edf-2803-4d31-b4a0-b4e3acd378ac';
  const sealed = (n: number) =>
    `v1.dev1.${'mk75DqnI5GisOYB_C3zvDuqSoPy'.repeat(Math.ceil(n / 27)).slice(0, n)}`;
  const data = JSON.stringify({ runId: id, tenant: 'dev', enqueuedAtMs: 1796443210815.7046 });
  const opts = JSON.stringify({
    removeOnFail: { age: 86400 },
    jobId: id,
    removeOnComplete: { age: 3600, count: 10000 },
    backoff: { delay: 500, type: 'fixed' },
    attempts: 3,
  });
  const q = (s: string) => JSON.stringify(s);
  const fields = `{'name','run','data',${q(data)},'opts',${q(opts)},'timestamp','1796443210817','delay','0','priority','0','processedOn','1796443210823','pb','vm','ats','1'}`;
  const record = `{'id',${q(id)},'tenant','dev','session','bench','turn','t','callId','c','status','Running','mode','read-only','code',${q(sealed(140))},'description',${q(sealed(70))},'request',${q(sealed(330))},'createdAt','1796443210812','updatedAt','1796443210812','attempts','0','clockMs','1796443210812','seed',${q(id)},'principal','key-bc1ffc028ef4','pushEnd','1','quiet','1','unwatched','1'}`;
  const expr = `{'84890ccb-0c45-41dd-9c5a-95d3e91c1e42:h:0', {${fields}, ${q(id)}, 0, 0, {${record}, 1, {'#attempt','1'}, {1,0}}, 1}}`;
  const member = (await redis.callBuffer('EVAL', `return cmsgpack.pack(${expr})`, 0)) as Buffer;
  const same = JSON.stringify(before(member), (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
  for (const read of [r30, now])
    if (same !== JSON.stringify(read(member), (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)))
      throw new Error('the reads differ');
  console.log(`member ${member.length} bytes`);

  for (const [name, read] of [
    ['msgpackr unpack + asReply (before)', before],
    ['decodeLuaValue (rounds 30-34)', r30],
    ['decodeLuaValue (round 35)', now],
  ] as const) {
    for (let i = 0; i < N / 5; i++) read(member);
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) read(member);
    console.log(`warm  ${name.padEnd(36)} ${(Number(process.hrtime.bigint() - t) / N / 1000).toFixed(2)} µs`);
  }

  // Cold: the sides in turn, one read after each sleep.
  const sides = [
    ['msgpackr unpack + asReply (before)', before],
    ['decodeLuaValue (rounds 30-34)', r30],
    ['decodeLuaValue (round 35)', now],
  ] as const;
  const cold: number[][] = sides.map(() => []);
  for (let i = 0; i < sides.length * SAMPLES; i++) {
    await new Promise((r) => setTimeout(r, GAP_MS));
    const side = i % sides.length;
    const t = performance.now();
    sides[side]![1](member);
    cold[side]!.push((performance.now() - t) * 1000);
  }
  sides.forEach(([name], side) => {
    const s = cold[side]!.sort((a, b) => a - b);
    const at = (p: number) => (s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0).toFixed(1);
    console.log(
      `cold  ${name.padEnd(36)} p25 ${at(0.25)} / p50 ${at(0.5)} / p90 ${at(0.9)} µs (after ${GAP_MS} ms asleep, ${s.length} reads)`,
    );
  });
} finally {
  redis.disconnect();
  await server.stop();
}
