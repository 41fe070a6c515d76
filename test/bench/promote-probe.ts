/**
 * `node --max-semi-space-size=16 --trace-gc-nvp test/bench/promote-probe.ts` (round 36, `tail`):
 * how much of a process's young generation outlives two scavenges when it does nothing but one
 * awaited Redis command at a time — the gateway's and the runner's scavenges promote ~0.8–1.5 MB
 * each (95–97 % of what the scavenge before kept), yet a heap snapshot (a full collection first)
 * finds none of it alive: data that lives a little longer than a scavenge's interval, or dead old
 * objects holding young ones through the remembered set. `MODE=evalsha` (default): EVALSHA with 20
 * arguments; `get`: a GET; `raw`: the GET written to a bare `net` socket, its reply awaited (no
 * ioredis); `none`: the same loop with a `setImmediate` for the command. Its own
 * redis-server (no AOF) on a random port; `N` (default 40000) iterations. Read the `promoted=` and
 * `new_space_survived=` fields of the `gc=s` lines (round 36's figures in test/bench/README.md).
 * Round 37 (`semi-space`): read only the lines after the first `gc=mc` — loading ioredis promotes
 * ~5 MB before it, which round 36 read as the loop's; after it `raw` promotes ~0 (`promote-warmup.mjs`).
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { Redis } from 'ioredis';

const port = 6400 + Math.floor(Math.random() * 500);
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
  stdio: 'ignore',
});
await new Promise((r) => setTimeout(r, 300));
const redis = new Redis({ port, maxRetriesPerRequest: null });
try {
  const sha = (await redis.script('LOAD', 'return ARGV[1]')) as string;
  const N = Number(process.env.N ?? 40000);
  const MODE = process.env.MODE ?? 'evalsha';
  if (MODE === 'raw') {
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let waiter: ((b: Buffer) => void) | undefined;
    socket.on('data', (b: Buffer) => waiter?.(b));
    for (let i = 0; i < N; i++) {
      const reply = new Promise<Buffer>((r) => {
        waiter = r;
      });
      socket.write(`*2\r\n$3\r\nGET\r\n$2\r\nk${i % 10}\r\n`);
      await reply;
    }
    socket.destroy();
  }
  for (let i = 0; MODE !== 'raw' && i < N; i++) {
    const args = Array.from({ length: 20 }, (_, k) => `arg-${i}-${k}-${'x'.repeat(40)}`);
    if (MODE === 'evalsha') await redis.evalsha(sha, 0, ...args);
    else if (MODE === 'get') await redis.get(`k${i % 10}`);
    else await new Promise((r) => setImmediate(r, args));
  }
} finally {
  redis.disconnect();
  server.kill();
}
