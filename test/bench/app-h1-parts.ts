/**
 * `node test/bench/app-h1-parts.ts`: the pieces of a plain-`http` App call in the gateway's own
 * client (`app-h1.ts`, `app-h1-answer.ts`) one at a time, without a socket, each run `N` times
 * (default 4000) after `WARM` (default 4000) in one process (`PART`):
 * - `request`: `requestBytes` of a binding call's request (app-call-sample.ts's 8 headers, ~330-byte body);
 * - `answer-chunked`: a new `AnswerReader` fed node:http's answer to `writeHead(200) + end(body)`
 *   (what the benches' Apps send: `Transfer-Encoding: chunked`, one chunk, no trailers) in one read;
 * - `answer-length`: the same answer with a `Content-Length` (express's `res.json`, most frameworks);
 * - `deadline`: the call's promise, its deadline timer armed and cleared, awaited in batches of 100
 *   (e8feb7a0's and c51dd98e's client: a `setTimeout` a call);
 * - `deadline-shared`: the same with the deadline filed on `app-h1-deadlines.ts`'s one shared timer
 *   and taken back (round 44 `call-timers`).
 * `H1_DIR=<dir>` imports the two files from there instead (e.g. e8feb7a0's, put beside the tree with
 * their `app-http-errors.ts`). Counted, not timed: run it under callgrind with `N=0` and `N=<n>`
 * (`app-h1-parts.sh`), which reads the same at any load. Without valgrind it prints ns a part (a hint).
 */

import type * as H1Module from '../../services/gateway/src/app-h1.ts';
import type * as AnswerModule from '../../services/gateway/src/app-h1-answer.ts';
import { sampleBody, sampleHeaders } from './app-call-sample.ts';

const dir = process.env.H1_DIR ?? '../../services/gateway/src';
const { requestBytes } = (await import(`${dir}/app-h1.ts`)) as typeof H1Module;
const { AnswerReader } = (await import(`${dir}/app-h1-answer.ts`)) as typeof AnswerModule;

const N = Number(process.env.N ?? 4000);
const WARM = Number(process.env.WARM ?? 4000);
const PART = process.env.PART ?? 'request';

const target = { host: '127.0.0.1', port: 8080, hostHeader: '127.0.0.1:8080', path: '/' };
const headers = sampleHeaders;
const body = sampleBody;
// node:http's bytes (v24) for `writeHead(200, {'content-type': …}).end('{"ok":true}')`, and the same with a length.
const head =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nDate: Sun, 06 Dec 2026 22:38:45 GMT\r\n' +
  'Connection: keep-alive\r\nKeep-Alive: timeout=600\r\n';
const chunked = Buffer.from(
  `${head}Transfer-Encoding: chunked\r\n\r\nb\r\n{"ok":true}\r\n0\r\n\r\n`,
  'latin1',
);
const length = Buffer.from(`${head}Content-Length: 11\r\n\r\n{"ok":true}`, 'latin1');
// A read buffer reused as the socket's is, so a body kept past the read must be copied.
const readBuffer = Buffer.alloc(64 * 1024);

let sink = 0;
const answer = (bytes: Buffer) => () => {
  bytes.copy(readBuffer, 0);
  const a = new AnswerReader(1 << 20).push(readBuffer.subarray(0, bytes.length));
  if (a?.text.length !== 11 || !a.reusable) throw new Error('the answer was not read');
  sink += a.status;
};
const deadline = () =>
  new Promise<number>((resolve) => {
    const t = setTimeout(() => resolve(0), 30_000).unref();
    queueMicrotask(() => {
      clearTimeout(t);
      resolve(1);
    });
  });

// The shared deadlines (app-h1-deadlines.ts; only in this tree, not under H1_DIR).
const { createDeadlines } = await import('../../services/gateway/src/app-h1-deadlines.ts');
const shared = createDeadlines<{ due: number; resolve: (n: number) => void }>((e) => e.resolve(0));
const deadlineShared = () =>
  new Promise<number>((resolve) => {
    const entry = { due: 0, resolve };
    shared.add(entry, 30_000);
    queueMicrotask(() => {
      shared.remove(entry);
      resolve(1);
    });
  });

const sync: Record<string, () => void> = {
  request: () => {
    sink += requestBytes(target, headers, body).length;
  },
  'answer-chunked': answer(chunked),
  'answer-length': answer(length),
};
const run = async (n: number) => {
  if (PART === 'deadline' || PART === 'deadline-shared') {
    const one = PART === 'deadline' ? deadline : deadlineShared;
    for (let i = 0; i < n; i += 100)
      sink += (await Promise.all(Array.from({ length: Math.min(100, n - i) }, one))).length;
    return;
  }
  const f = sync[PART];
  if (!f) throw new Error(`no part ${PART}`);
  for (let i = 0; i < n; i++) f();
};
await run(WARM);
const t0 = process.hrtime.bigint();
await run(N);
const ns = Number(process.hrtime.bigint() - t0);
if (N > 0) console.log(`${PART}: ${(ns / N).toFixed(0)} ns a part (a hint; ${sink})`);
