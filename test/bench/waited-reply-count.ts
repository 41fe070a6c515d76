/**
 * `node --single-threaded test/bench/waited-reply-count.ts`, for callgrind (`waited-reply-count.sh`):
 * the instructions a waited submit's answer costs from the pushed end's turn to the response's
 * bytes written, counted not timed (round 52, `gateway-reply`). A fastify server set up as the
 * gateway's (buildApp's options and hooks: the metrics' onResponse, shutdown's onRequest / onSend,
 * the submit route's onSend and a callback preHandler) serves `POST /v1/runs`; the route sets
 * `location` and `preference-applied` in its first turn as the gateway does, then waits a
 * macrotask (the pushed end arrives on a later turn), builds the record (`toRecord`) and answers.
 * A client in the same process writes each request over one keep-alive socket and reads the
 * answer: an op is one request and its answer, so the difference between SIDEs is the tail's.
 * - `SIDE=base`: b7514025's tail: `reply.code(record.result ? 200 : 202).send(record)`, `return reply`;
 * - `SIDE=head`: this tree's (`sendSubmitRecord`, waited-reply.ts);
 * - `SIDE=floor`: the same bytes written by `reply.raw.writeHead` / `end` from a body made ahead,
 *   no record, no fastify send (not an answer the gateway may give: its hooks are skipped): what is
 *   left of an op that is not the record's or fastify's reply path;
 * - `SIDE=norecord`: the floor plus `toRecord` + `JSON.stringify` (the record's share).
 * `WARM` ops first (default 3000), then `N`. Every side checks its answer against base's once.
 * `CG_TOGGLE=1` (waited-reply-count.sh): run under callgrind with `--instr-atstart=no`, the probe
 * switches collection on after the warm-up and off after the N ops (`callgrind_control -i`), so the
 * start (imports, the warm-up) is not instrumented and the count is the ops' plus the toggles'.
 */

import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyReply, LogController } from 'fastify';
import pino from 'pino';
import { createMetrics } from '../../services/core/src/metrics.ts';
import { httpRecorder } from '../../services/gateway/src/app.ts';
import { lazyChildLoggerFactory } from '../../services/gateway/src/lazy-request-logger.ts';
import { toRecord } from '../../services/gateway/src/record.ts';
import { createShutdown } from '../../services/gateway/src/shutdown.ts';
import { sendSubmitRecord } from '../../services/gateway/src/waited-reply.ts';
import { benchStoredRun, BENCH_RUN_ID as id } from './bench-stored-run.ts';

const N = Number(process.env.N ?? 0);
const WARM = Number(process.env.WARM ?? 3000);
const SIDE = process.env.SIDE ?? 'head';

const run = benchStoredRun({
  result: { _tag: 'Completed', value: { ok: true }, logs: [] },
  text: '{"ok":true}',
});

const logger = pino({ level: 'warn' });
const metrics = createMetrics({ component: 'gateway', defaults: false });
const app = Fastify({
  loggerInstance: logger as unknown as FastifyBaseLogger,
  logController: new LogController({ disableRequestLogging: true }),
  childLoggerFactory: lazyChildLoggerFactory,
  return503OnClosing: true,
});
const recordHttp = httpRecorder(metrics);
app.addHook('onResponse', (request, reply, done) => {
  recordHttp(
    request.routeOptions.url ?? 'unmatched',
    request.method,
    reply.statusCode,
    reply.elapsedTime / 1000,
  );
  done();
});
createShutdown({ apps: [app], delayMs: 0, logger, afterClose: async () => {} });

const floorBody = JSON.stringify(toRecord(run, []));
const tail: Record<string, (reply: FastifyReply) => FastifyReply | undefined> = {
  base(reply) {
    const record = toRecord(run, []);
    return reply.code(record.result ? 200 : 202).send(record);
  },
  head(reply) {
    return sendSubmitRecord(reply, toRecord(run, []));
  },
  floor(reply) {
    const raw = reply.raw;
    raw.writeHead(200, {
      location: `/v1/code-runs/${id}`,
      'preference-applied': 'wait=10',
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(floorBody)),
    });
    raw.end(floorBody);
    return undefined;
  },
  norecord(reply) {
    const body = JSON.stringify(toRecord(run, []));
    const raw = reply.raw;
    raw.writeHead(200, {
      location: `/v1/code-runs/${id}`,
      'preference-applied': 'wait=10',
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
    });
    raw.end(body);
    return undefined;
  },
};
const sideOf = (name: string) => {
  const f = tail[name];
  if (!f) throw new Error(`SIDE: one of ${Object.keys(tail).join(', ')}`);
  return f;
};
let side = sideOf(SIDE);

const onSend = (_request: unknown, _reply: unknown, payload: unknown, done: (e: null, p: unknown) => void) =>
  done(null, payload);
const preHandler = (_request: unknown, _reply: unknown, done: () => void) => done();
app.post('/v1/runs', { preHandler, onSend }, async (_request, reply) => {
  reply.header('location', `/v1/code-runs/${id}`);
  reply.header('preference-applied', 'wait=10');
  // The pushed end arrives on a later turn of the event loop.
  await new Promise((resolve) => setImmediate(resolve));
  return side(reply);
});

await app.listen({ port: 0, host: '127.0.0.1' });
const port = (app.server.address() as { port: number }).port;
const socket = connect(port, '127.0.0.1');
await new Promise((resolve) => socket.once('connect', resolve));
const body = '{}';
const request = Buffer.from(
  `POST /v1/runs HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nprefer: wait=10\r\n\r\n${body}`,
);
let pending: ((text: string) => void) | undefined;
let got = '';
socket.setEncoding('latin1');
socket.on('data', (d: string) => {
  got += d;
  const end = got.indexOf('\r\n\r\n');
  if (end < 0) return;
  const length = Number(/content-length: (\d+)/i.exec(got)?.[1]);
  if (got.length < end + 4 + length) return;
  const text = got;
  got = '';
  pending?.(text);
});
const ask = () =>
  new Promise<string>((resolve) => {
    pending = resolve;
    socket.write(request);
  });
const noDate = (t: string) => t.replace(/\r\nDate: [^\r]*/, '');

const own = SIDE;
side = sideOf('base');
const expected = noDate(await ask());
side = sideOf(own);
if (noDate(await ask()) !== expected && own !== 'floor' && own !== 'norecord')
  throw new Error(`${own}'s answer differs from base's:\n${expected}`);
/** callgrind's instrumentation on or off for this process (vgdb reaches it while it waits). */
const instrument = (on: boolean) =>
  new Promise<void>((resolve, reject) =>
    execFile('callgrind_control', ['-i', on ? 'on' : 'off', String(process.pid)], (err) =>
      err ? reject(err) : resolve(),
    ),
  );
const toggle = process.env.CG_TOGGLE === '1';
/** A full GC (`--expose-gc`), so the collection window does not catch a timer-driven one. */
const settle = () => (globalThis as { gc?: () => void }).gc?.();
for (let i = 0; i < WARM; i++) await ask();
settle();
if (toggle) await instrument(true);
for (let i = 0; i < N; i++) await ask();
settle();
if (toggle) await instrument(false);
socket.destroy();
await app.close();
