/**
 * `node test/bench/host-stdout-cpu.ts`: the engine's read of a sandbox host's frames alone (round
 * 41, `stdout-pair`): this process starts a child that answers every frame on its stdin (read as a
 * host reads, host-input.ts) with a call frame written straight to fd 1 (as a host writes), and
 * reads the child's stdout either way, one child each, their blocks of `N` frames alternated
 * `ROUNDS` (default 10) times (stream, onread, onread, stream, …):
 * `stream` (`child.stdout`'s `'data'` event: the engine's read until round 41) or `onread`
 * (host-stdout.ts `readHostFrames` on the same socket). It sends the next frame straight to the
 * child's stdin descriptor on each answer, as host-process.ts does (`N`, default 2000, after `WARM`
 * 2000). Per frame: this process's main thread's CPU (`/proc/self/task/<pid>/schedstat`), its
 * `process.nextTick` calls and readable-stream pushes.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { encodeMessage, FrameReader } from '../../services/engine/src/frame.ts';
import { readHostFrames } from '../../services/engine/src/host-stdout.ts';

const N = Number(process.env.N ?? 2000);
const WARM = Number(process.env.WARM ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const src = (f: string) => JSON.stringify(new URL(`../../services/engine/src/${f}`, import.meta.url).href);
const CHILD = `
import { readFileSync, writeSync } from 'node:fs';
import { encodeMessage, FrameReader } from ${src('frame.ts')};
import { readStdinFrames } from ${src('host-input.ts')};
const answer = Buffer.concat(encodeMessage({ t: 'call', id: 1, binding: 'bench.ping', argsJson: '{"i":1}' }));
readStdinFrames(new FrameReader(() => writeSync(1, answer)), () => process.exit(0));
`;

let ticks = 0;
let pushes = 0;
const nextTick = process.nextTick;
process.nextTick = (...a: Parameters<typeof nextTick>) => {
  ticks++;
  return nextTick(...a);
};
const push = Readable.prototype.push;
Readable.prototype.push = function (this: Readable, ...a: Parameters<typeof push>) {
  pushes++;
  return push.apply(this, a);
};
const frame = Buffer.concat(encodeMessage({ t: 'result', id: 0, valueJson: '{"n":1}', turnMs: 119000 }));

/** The main thread's on-CPU time, µs (the read runs there; not V8's helper threads). */
const mainCpuUs = () =>
  Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;

/** A child read one way, ping-ponged `n` frames at a time. */
function peer(how: 'stream' | 'onread') {
  const p = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const fd = (p.stdin as unknown as { _handle: { fd: number } })._handle.fd;
  let left = 0;
  let done: () => void = () => {};
  const reader = new FrameReader(() => {
    if (--left === 0) done();
    else writeSync(fd, frame);
  });
  if (how === 'stream') p.stdout!.on('data', (c: Buffer) => reader.push(c));
  else if (!readHostFrames(p.stdout!, reader)) throw new Error('no onread on this Node');
  return {
    how,
    pingPong: (n: number) =>
      new Promise<void>((resolve) => {
        left = n;
        done = resolve;
        writeSync(fd, frame);
      }),
    close: () => {
      p.stdin!.end();
      return new Promise((r) => p.on('close', r));
    },
  };
}

// Both children alive at once and their blocks alternated (stream, onread, onread, stream, …), so
// the box's drift falls on both ways alike.
const peers = [peer('stream'), peer('onread')];
for (const x of peers) await x.pingPong(WARM);
const results = {
  stream: [] as { us: number; ticks: number; pushes: number }[],
  onread: [] as { us: number; ticks: number; pushes: number }[],
};
for (let round = 0; round < ROUNDS; round++) {
  for (const x of round % 2 === 0 ? peers : [...peers].reverse()) {
    ticks = 0;
    pushes = 0;
    const before = mainCpuUs();
    await x.pingPong(N);
    results[x.how].push({ us: (mainCpuUs() - before) / N, ticks: ticks / N, pushes: pushes / N });
  }
}
for (const x of peers) await x.close();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
let lower = 0;
for (let i = 0; i < ROUNDS; i++) if (results.onread[i]!.us < results.stream[i]!.us) lower++;
for (const how of ['stream', 'onread'] as const) {
  const r = results[how];
  console.log(
    `${how.padEnd(6)}: main thread CPU a frame ${r.map((x) => x.us.toFixed(1)).join(' / ')} µs (median ${median(r.map((x) => x.us)).toFixed(2)}), nextTick ${r[0]!.ticks.toFixed(2)}, stream pushes ${r[0]!.pushes.toFixed(2)} a frame`,
  );
}
console.log(`onread lower in ${lower} of ${ROUNDS} rounds`);
