/**
 * `node test/bench/gateway-post-cpu.ts`: the runner's lone-call transport (`GatewayPost`,
 * gateway-post.ts) alone, against a minimal HTTP gateway in a child process (so only the client's
 * work is in this process): after `WARM` (default 300) POSTs on the kept socket, `N` (default 3000)
 * one after another, and per request this process's CPU (µs, `process.cpuUsage`), its
 * `process.nextTick` calls and its read and write syscalls (`/proc/self/io`). `ROUNDS` (default 4)
 * rounds, each a fresh transport. Round 40 (`call-floor`): for `ab.sh` against a base.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { GatewayPost } from '../../services/runner/src/gateway-post.ts';

const WARM = Number(process.env.WARM ?? 300);
const N = Number(process.env.N ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const ANSWER = '{"outcome":{"type":"result","valueJson":"{\\"n\\":1}"},"deliverySeq":3}';
const child = spawn(
  process.execPath,
  [
    '-e',
    `const s = require('http').createServer((q, r) => { q.resume(); q.on('end', () => { r.writeHead(200, { 'content-type': 'application/json' }); r.end(${JSON.stringify(ANSWER)}); }); });
     s.listen(0, '127.0.0.1', () => console.log(s.address().port));`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const port = await new Promise<number>((r) =>
  child.stdout!.once('data', (d: Buffer) => r(Number(String(d)))),
);
const url = `http://127.0.0.1:${port}/internal/v1/code-runs/run-1/calls`;
const headers = { authorization: 'Bearer token', 'content-type': 'application/json' };
const body = JSON.stringify({ attempt: 1, index: 0, binding: 'bench.ping', argsJson: '{"i":1}' });
const io = () => {
  const text = readFileSync('/proc/self/io', 'utf8');
  return { r: Number(/^syscr: (\d+)/m.exec(text)?.[1]), w: Number(/^syscw: (\d+)/m.exec(text)?.[1]) };
};
const nextTick = process.nextTick;
try {
  for (let round = 0; round < ROUNDS; round++) {
    const post = new GatewayPost();
    for (let i = 0; i < WARM; i++) await post.post(url, headers, body);
    let ticks = 0;
    process.nextTick = function (this: unknown, ...args: unknown[]) {
      ticks++;
      return (nextTick as (...a: unknown[]) => void).apply(this, args);
    } as typeof process.nextTick;
    const io0 = io();
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < N; i++) {
      const res = await post.post(url, headers, body);
      if (res.status !== 200) throw new Error(`status ${res.status}`);
    }
    const cpu = process.cpuUsage(cpu0);
    const io1 = io();
    process.nextTick = nextTick;
    post.close();
    console.log(
      `round ${round}: CPU a request ${((cpu.user + cpu.system) / N).toFixed(1)} µs, nextTick ${(ticks / N).toFixed(2)}, syscalls ${((io1.r - io0.r) / N).toFixed(2)} reads + ${((io1.w - io0.w) / N).toFixed(2)} writes`,
    );
  }
} finally {
  process.nextTick = nextTick;
  child.kill();
}
