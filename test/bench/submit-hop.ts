/**
 * `node test/bench/submit-hop.ts`: the one-client stage "send → enqueue" on one clock (round 37,
 * `submit-gw`). Needs `git apply test/bench/gw-steps.patch` (its `gw-stamps.ts` writes, besides
 * the steps' p50s, each submit's request event and EVALSHA write on CLOCK_MONOTONIC), `git apply
 * -R` after. A one-client cluster as `seq-cpu.ts` sets it up (fair share 0.5), `WARM` runs
 * (default 1500), then `RUNS` (default 1000) stamped runs, the client's send on `process.hrtime`
 * (the same clock across processes); then prints, per run, p50 / p25 / mean µs of
 * - client: `send` stamped → the gateway's HTTP `request` event (the client's write, loopback TCP,
 *   the gateway's wake-up, its read and llhttp's header parse);
 * - the gateway: `request` event → the submit's EVALSHA written to Redis's socket;
 * and the gateway's own steps between them (the patch's `GW_OUT` file, over every run, warm ones
 * included). `GAP_MS` (default 0): a sleep of the client between runs (a gateway idle that long
 * before each submit, its code cold: 0 is the sequential bench's back-to-back).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WARM = Number(process.env.WARM ?? 1500);
const GAP_MS = Number(process.env.GAP_MS ?? 0);
const dir = mkdtempSync(join(tmpdir(), 'submit-hop-'));
const monoMs = () => Number(process.hrtime.bigint()) / 1e6;

const cluster = await startOneClientCluster('0.5', { GW_OUT: join(dir, 'gw') });
const sent: number[] = [];
// The client's request reaching its socket (libuv's write): the first write after each send.
let writtenAt = Number.NaN;
const writes: number[] = [];
const S = net.Socket.prototype as unknown as { _writeGeneric: (...a: unknown[]) => unknown };
const writeGeneric = S._writeGeneric;
S._writeGeneric = function (this: unknown, ...a: unknown[]) {
  if (Number.isNaN(writtenAt)) writtenAt = monoMs();
  return writeGeneric.apply(this, a);
};
try {
  const once = stampedRun(cluster, monoMs);
  for (let i = 0; i < WARM; i++) await once();
  for (let i = 0; i < RUNS; i++) {
    if (GAP_MS > 0) await new Promise((r) => setTimeout(r, GAP_MS));
    writtenAt = Number.NaN;
    sent.push((await once()).sent);
    writes.push(writtenAt);
  }
  // The stamps are written every 100 ends: enough more runs that the last write holds every one.
  for (let i = 0; i < 101; i++) await once();
} finally {
  await cluster.stop();
}

const monoFile = readdirSync(dir).find((f) => f.endsWith('.mono.txt'));
const stepsFile = readdirSync(dir).find((f) => /^gw-\d+\.txt$/.test(f));
if (!monoFile || !stepsFile) throw new Error(`no stamps in ${dir}: is gw-steps.patch applied?`);
const pairs = readFileSync(join(dir, monoFile), 'utf8')
  .trim()
  .split('\n')
  .map((l) => l.split(' ').map((v) => Number(BigInt(v)) / 1e6) as [number, number]);
const toWritten = sent.map((s, i) => (writes[i]! - s) * 1000);
const writtenToReq: number[] = [];
const toReq: number[] = [];
const toWrite: number[] = [];
let at = 0;
for (const s of sent) {
  while (at < pairs.length && pairs[at]![0] < s) at++;
  const p = pairs[at];
  if (!p) break;
  toReq.push((p[0] - s) * 1000);
  writtenToReq.push((p[0] - writes[sent.indexOf(s)]!) * 1000);
  if (p[1] > 0) toWrite.push((p[1] - p[0]) * 1000);
}
// The previous response: its socket write returned, then the check phase after that turn (the
// gateway's tail of the previous run: onResponse, the request's end), against this run's send.
const resFile = readdirSync(dir).find((f) => f.endsWith('.resend.txt'));
const responses = resFile
  ? readFileSync(join(dir, resFile), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ').map((v) => Number(BigInt(v)) / 1e6) as [number, number])
  : [];
const resToSend: number[] = [];
const tail: number[] = [];
const tailPastWrite: number[] = [];
let r = 0;
sent.forEach((s, i) => {
  while (r + 1 < responses.length && responses[r + 1]![0] < s) r++;
  const prev = responses[r];
  if (!prev || prev[0] > s || !(prev[1] > 0)) return;
  resToSend.push((s - prev[0]) * 1000);
  tail.push((prev[1] - prev[0]) * 1000);
  tailPastWrite.push((prev[1] - writes[i]!) * 1000);
});
const line = (name: string, a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  const mean = s.reduce((x, y) => x + y, 0) / s.length;
  return `${name.padEnd(44)} n=${s.length} p50=${s[s.length >> 1]?.toFixed(1)} p25=${s[s.length >> 2]?.toFixed(1)} mean=${mean.toFixed(1)}`;
};
console.log(`settings: RUNS=${RUNS} WARM=${WARM} GAP_MS=${GAP_MS}; µs`);
console.log(line('client send → gateway request event', toReq));
console.log(line("  of which send → the client socket's write", toWritten));
console.log(line('  of which its write → gateway request event', writtenToReq));
console.log(line('gateway request event → EVALSHA written', toWrite));
console.log(line('previous response written → client send', resToSend));
console.log(line('previous response written → its turn ends', tail));
console.log(line("  its turn's end − this request's write", tailPastWrite));
console.log(
  `  runs whose request was written before the previous turn ended: ${tailPastWrite.filter((x) => x > 0).length} of ${tailPastWrite.length}`,
);
console.log(readFileSync(join(dir, stepsFile), 'utf8').split('== end')[0]);
