/**
 * `node --max-semi-space-size=16 --trace-gc-nvp test/bench/promote-warmup.mjs | node
 * test/bench/promote-warmup.mjs --sum` (round 37, `semi-space`): bytes promoted by scavenges in one
 * process doing one thing `N` times (default 100000), counted after its first mark-compact (a
 * process's start — loading ioredis — promotes ~5 MB, which round 36's `promote-probe.ts MODE=raw`
 * read as its socket's), and split between the first and second half of those scavenges: what is
 * promoted only while V8 has not optimized the code yet shows in the first half alone. `MODE`:
 * - `socket`: a GET written to a bare `net` socket, the next one sent from the reply's `data` event;
 * - `ioredis`: ioredis GETs awaited one at a time;
 * - `command`: ioredis's `Command` made and resolved, no socket (`setImmediate` every 100).
 * Add `--jitless` to see the same loops with no optimizing compiler: nearly every object promoted.
 * Its own redis-server (no AOF) on a random port; ioredis is loaded in every mode. Counts, no lock.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { connect } from 'node:net';

if (process.argv[2] === '--sum') {
  // Reads `--trace-gc-nvp` output on stdin: promoted bytes of the scavenges after the first `gc=mc`.
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  const field = (line, name) => Number(new RegExp(` ${name}=(\\d+)`).exec(line)?.[1] ?? 0);
  const lines = text.split('\n').filter((l) => l.includes(' gc='));
  const first = lines.findIndex((l) => l.includes(' gc=mc'));
  const after = lines.slice(first + 1).filter((l) => l.includes(' gc=s'));
  const half = Math.floor(after.length / 2);
  const kb = (ls) => (ls.reduce((t, l) => t + field(l, 'promoted'), 0) / 1024).toFixed(0);
  console.log(
    `${first < 0 ? 'no mark-compact: all ' : ''}${after.length} scavenges after the first mark-compact: ` +
      `promoted ${kb(after)} KB (first half ${kb(after.slice(0, half))}, second half ${kb(after.slice(half))})`,
  );
  process.exit(0);
}

const N = Number(process.env.N ?? 100000);
const MODE = process.env.MODE ?? 'ioredis';
const require = createRequire(import.meta.url);
const { Redis } = await import('ioredis');
const port = 6900 + Math.floor(Math.random() * 500);
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
  stdio: 'ignore',
});
await new Promise((r) => setTimeout(r, 300));
const redis = new Redis({ port, maxRetriesPerRequest: null });
await redis.ping();
const get = (i) => `*2\r\n$3\r\nGET\r\n$2\r\nk${i % 10}\r\n`;
const yieldEvery100 = (i) => (i % 100 === 0 ? new Promise((r) => setImmediate(r)) : undefined);
try {
  if (MODE === 'socket') {
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let i = 0;
    await new Promise((done) => {
      socket.on('data', () => (++i < N ? socket.write(get(i)) : done()));
      socket.write(get(i));
    });
    socket.destroy();
  } else if (MODE === 'ioredis') {
    for (let i = 0; i < N; i++) await redis.get(`k${i % 10}`);
  } else if (MODE === 'command') {
    const Command = require('ioredis/built/Command.js').default;
    for (let i = 0; i < N; i++) {
      new Command('get', [`k${i % 10}`]).resolve(null);
      await yieldEvery100(i);
    }
  } else throw new Error(`MODE ${MODE}?`);
} finally {
  redis.disconnect();
  server.kill();
}
