/**
 * `node test/bench/host-input-cpu.ts`: the sandbox host's read of its frames alone (round 40,
 * `call-floor`): a child process reads frames from stdin (a socket pair, as a host's) and answers
 * each with a small frame written straight to fd 1, as the host does; this process sends the next
 * frame on each answer (`N`, default 5000, after `WARM` 500). The child reads either way, children
 * alternated `ROUNDS` (default 4) times: `stream` (stdin's stream, each chunk from the tick queue:
 * frame.ts `readFramesInTicks`, the host's read until round 40) or `onread` (host-input.ts
 * `readStdinFrames`). Per frame: the child's CPU (every thread, `/proc/<pid>/task/*\/schedstat`),
 * its `process.nextTick` calls and readable-stream pushes.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { encodeMessage, FrameReader } from '../../services/engine/src/frame.ts';

const N = Number(process.env.N ?? 5000);
const WARM = Number(process.env.WARM ?? 500);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const src = (f: string) => JSON.stringify(new URL(`../../services/engine/src/${f}`, import.meta.url).href);
const child = (how: string) => `
import { writeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { encodeMessage, FrameReader, readFramesInTicks } from ${src('frame.ts')};
import { readStdinFrames } from ${src('host-input.ts')};
let ticks = 0, pushes = 0, frames = 0;
const nextTick = process.nextTick;
process.nextTick = (...a) => { ticks++; return nextTick(...a); };
const push = Readable.prototype.push;
Readable.prototype.push = function (...a) { pushes++; return push.apply(this, a); };
const answer = Buffer.concat(encodeMessage({ t: 'call', id: 1, binding: 'bench.ping', argsJson: '{"i":1}' }));
const reader = new FrameReader((e) => {
  if (++frames === ${WARM}) { ticks = 0; pushes = 0; }
  if (e.message.t === 'count') writeSync(1, Buffer.concat(encodeMessage({ t: 'count', ticks, pushes })));
  else writeSync(1, answer);
});
${how === 'stream' ? 'readFramesInTicks(process.stdin, reader);' : 'readStdinFrames(reader, () => process.exit(0));'}
`;
const cpuUs = (pid: number) => {
  let us = 0;
  for (const t of readdirSync(`/proc/${pid}/task`))
    us += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  return us;
};
const frame = Buffer.concat(encodeMessage({ t: 'result', id: 0, valueJson: '{"n":1}', turnMs: 119000 }));

async function side(how: string): Promise<string> {
  const p = spawn(process.execPath, ['--input-type=module', '-e', child(how)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let onMessage: (m: { t: string; ticks?: number; pushes?: number }) => void = () => {};
  const reader = new FrameReader((e) => {
    if (e.type === 'message') onMessage(e.message as { t: string });
  });
  p.stdout!.on('data', (c: Buffer) => reader.push(c));
  const pingPong = (n: number) =>
    new Promise<void>((resolve) => {
      let left = n;
      onMessage = () => {
        if (--left === 0) resolve();
        else p.stdin!.write(frame);
      };
      p.stdin!.write(frame);
    });
  await pingPong(WARM);
  const before = cpuUs(p.pid!);
  await pingPong(N);
  const us = (cpuUs(p.pid!) - before) / N;
  const counts = await new Promise<{ ticks?: number; pushes?: number }>((resolve) => {
    onMessage = resolve;
    p.stdin!.write(Buffer.concat(encodeMessage({ t: 'count' })));
  });
  p.stdin!.end();
  await new Promise((r) => p.on('exit', r));
  return `${how.padEnd(6)}: child CPU a frame ${us.toFixed(1)} µs, nextTick ${((counts.ticks ?? 0) / N).toFixed(2)}, stream pushes ${((counts.pushes ?? 0) / N).toFixed(2)}`;
}

for (let round = 0; round < ROUNDS; round++)
  for (const how of round % 2 === 0 ? ['stream', 'onread'] : ['onread', 'stream'])
    console.log(`round ${round} ${await side(how)}`);
