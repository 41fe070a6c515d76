/**
 * `node test/bench/app-leg-count.ts`: a binding call's App leg on the gateway's side alone —
 * `PARALLEL` (default 100) POSTs at a time to a loopback App in a child process over kept-alive
 * connections, `N` requests after `WARM` (default 3000) — one way a process (`WAY`):
 * - `post`: the gateway's `postToApp` (app-http.ts; `APP_HTTP=<file>` counts another's, e.g. a0565cd2's,
 *   whose plain-http calls went through undici `Agent.dispatch` with its handler);
 * - `raw`: a bare kept socket, the request in one write, the answer read by its `Content-Length`
 *   through a `data` listener (the floor any client on a stream socket pays; not a client);
 * - `raw-onread`: the same, the socket read through `onread` into one buffer (no stream push).
 * `TICKS=1` prints `process.nextTick` calls and stream pushes a request (counts).
 * Counted, not timed: run it under callgrind with `N=0` and `N=<n>` and take the difference over n
 * (`app-leg-count.sh`); the App is a child process, so callgrind counts the client's side only.
 */
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { postToApp as postNow } from '../../services/gateway/src/app-http.ts';
import { sampleBody, sampleHeaders } from './app-call-sample.ts';
import { startLoopbackApp } from './loopback-app.ts';

// `APP_HTTP=<path>`: another app-http.ts to count (e.g. a0565cd2's, put beside this tree).
const postToApp: typeof postNow = process.env.APP_HTTP
  ? (await import(process.env.APP_HTTP)).postToApp
  : postNow;

const PARALLEL = Number(process.env.PARALLEL ?? 100);
const N = Number(process.env.N ?? 2000);
const WARM = Number(process.env.WARM ?? 3000);
const WAY = process.env.WAY ?? 'post';
const { app, port, url } = await startLoopbackApp(600000);
const headers = sampleHeaders;
const body = sampleBody;
const options = { timeoutMs: 30_000, allowPrivate: true, maxResponseBytes: 1 << 20 };

const head = () =>
  `POST / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n` +
  Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('') +
  `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
const idle: Socket[] = [];
const answerOf = (got: Buffer): string | undefined => {
  const end = got.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const m = /content-length: (\d+)/i.exec(got.toString('latin1', 0, end));
  const length = Number(m?.[1] ?? 0);
  if (got.length < end + 4 + length) return undefined;
  return got.toString('utf8', end + 4, end + 4 + length);
};
const viaRaw = () =>
  new Promise<string>((resolve, reject) => {
    const socket = idle.pop() ?? connect(port, '127.0.0.1').setNoDelay(true);
    let got: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      got = got.length ? Buffer.concat([got, chunk]) : chunk;
      const text = answerOf(got);
      if (text === undefined) return;
      socket.off('data', onData);
      socket.off('error', reject);
      idle.push(socket);
      resolve(text);
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(head() + body);
  });

interface ReadSocket {
  socket: Socket;
  done?: (text: string) => void;
}
const idleRead: ReadSocket[] = [];
const viaRawOnread = () =>
  new Promise<string>((resolve) => {
    let r = idleRead.pop();
    if (!r) {
      const buf = Buffer.allocUnsafe(64 * 1024);
      const made: ReadSocket = {
        socket: connect({
          port,
          host: '127.0.0.1',
          noDelay: true,
          onread: {
            buffer: buf,
            callback: (n: number) => {
              const text = answerOf(buf.subarray(0, n));
              if (text === undefined) throw new Error('split answer: not in this probe');
              const d = made.done;
              made.done = undefined;
              idleRead.push(made);
              d?.(text);
              return true;
            },
          },
        } as never),
      };
      r = made;
    }
    r.done = resolve;
    r.socket.write(head() + body);
  });

const one: () => Promise<unknown> =
  WAY === 'raw' ? viaRaw : WAY === 'raw-onread' ? viaRawOnread : () => postToApp(url, headers, body, options);
const batches = async (n: number) => {
  for (let i = 0; i < n; i += PARALLEL)
    await Promise.all(Array.from({ length: Math.min(PARALLEL, n - i) }, one));
};
await batches(WARM);
// `TICKS=1`: count `process.nextTick` calls and stream pushes during the N requests (counts, any load).
let ticks = 0;
let pushes = 0;
if (process.env.TICKS) {
  const tick = process.nextTick;
  process.nextTick = ((...a: Parameters<typeof tick>) => {
    ticks++;
    return tick(...a);
  }) as typeof tick;
  const push = Readable.prototype.push;
  Readable.prototype.push = function (this: Readable, ...a: Parameters<typeof push>) {
    pushes++;
    return push.apply(this, a);
  };
}
const t0 = process.threadCpuUsage();
await batches(N);
const t = process.threadCpuUsage(t0);
if (process.env.TICKS)
  console.log(
    `${WAY}: process.nextTick ${(ticks / N).toFixed(2)}, stream pushes ${(pushes / N).toFixed(2)} a request`,
  );
if (N > 0)
  console.log(`${WAY}: ${((t.user + t.system) / N).toFixed(1)} µs of this thread a request (a hint)`);
for (const s of idle) s.destroy();
for (const r of idleRead) r.socket.destroy();
app.kill();
process.exit(0);
