/**
 * A kept App connection the App closed while it idled is never used for the next call, even when
 * the close and the call's trigger reach the gateway in the same read of its event loop: undici
 * 8's idle-socket check (GHSA-35p6-xmwp-9g52) writes a request on a reused socket only after the
 * poll phase has read what was pending on it, so the close is seen first and the call goes out on
 * a new connection. Without the check the request is written to the closed socket and the call
 * fails (test/bench/README.md, round 36 `app-undici`: its measurement-only preload takes the
 * check out and this test then fails). The App runs in a worker thread so that its close and the
 * trigger are both sent while the test's thread is blocked.
 */
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postToApp } from './app-http.ts';

// The App: answers each request with its connection's number; on 'close-idle' it writes one byte
// to the trigger connection, then closes every idle App connection (the byte is sent first), and
// only then wakes the test's thread.
const APP = `
const { createServer } = require('node:http');
const { createServer: createNet } = require('node:net');
const { parentPort, workerData } = require('node:worker_threads');
const flag = new Int32Array(workerData);
let connections = 0;
let requests = 0;
const sockets = new Set();
const app = createServer((req, res) => {
  requests++;
  req.resume();
  req.on('end', () => res.end(JSON.stringify({ connection: req.socket.n, requests })));
});
app.keepAliveTimeout = 60000;
app.on('connection', (s) => { s.n = ++connections; sockets.add(s); s.on('close', () => sockets.delete(s)); });
let trigger;
const control = createNet((s) => { trigger = s; });
parentPort.on('message', (m) => {
  if (m === 'close-idle') {
    trigger.write('x', () => {
      let left = sockets.size;
      for (const s of sockets) { s.once('close', () => { if (--left === 0) { Atomics.store(flag, 0, 1); Atomics.notify(flag, 0); } }); s.destroy(); }
    });
  } else if (m === 'stop') { app.close(); control.close(); trigger?.destroy(); parentPort.close(); }
});
app.listen(0, '127.0.0.1', () => control.listen(0, '127.0.0.1', () =>
  parentPort.postMessage({ app: app.address().port, control: control.address().port })));
`;

let worker: Worker;
let flag: Int32Array;
let appPort: number;
let trigger: Socket;

beforeAll(async () => {
  const shared = new SharedArrayBuffer(4);
  flag = new Int32Array(shared);
  worker = new Worker(APP, { eval: true, workerData: shared });
  const ports = await new Promise<{ app: number; control: number }>((r) => worker.once('message', r));
  appPort = ports.app;
  trigger = connect(ports.control, '127.0.0.1');
  // The App's end of it is destroyed when the App stops: a reset then is no failure of the test.
  trigger.on('error', () => undefined);
  await new Promise<void>((r) => trigger.once('connect', () => r()));
});

afterAll(async () => {
  trigger.destroy();
  worker.postMessage('stop');
  await new Promise((r) => worker.once('exit', r));
});

const call = () =>
  postToApp(`http://127.0.0.1:${appPort}/`, { 'content-type': 'application/json' }, '{}', {
    timeoutMs: 5000,
    allowPrivate: true,
    maxResponseBytes: 1024,
  });

describe('App HTTP client: a connection the App closed while idle', () => {
  it('a call triggered in the same read as the close goes out on a new connection and succeeds', async () => {
    const first = await call();
    expect(JSON.parse(first.text)).toEqual({ connection: 1, requests: 1 });
    // Idle now (undici puts a socket back a turn after its answer).
    await new Promise((r) => setTimeout(r, 20));

    let second: Promise<{ status: number; text: string }> | undefined;
    trigger.once('data', () => {
      second = call();
    });
    worker.postMessage('close-idle');
    // Blocked until the App has sent the trigger's byte and then closed the idle connection: both
    // are pending when this thread reads again, the byte first, in one poll of its event loop.
    // ('not-equal': the App was done before this thread got here, also before it read again.)
    expect(Atomics.wait(flag, 0, 0, 5000)).not.toBe('timed-out');
    await new Promise<void>((r) => {
      const wait = () => (second ? r() : setImmediate(wait));
      wait();
    });
    const answer = await second!;
    expect(answer.status).toBe(200);
    // A second connection, and the App saw two requests in all: none was sent to the closed one.
    expect(JSON.parse(answer.text)).toEqual({ connection: 2, requests: 2 });
  });
});
