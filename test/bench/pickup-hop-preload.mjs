/**
 * Stamps of the pick-up's hop inside the gateway and the runner, with no product code changed
 * (round 33, `pickup-hop`): loaded by `node --import` (NODE_OPTIONS, which the local cluster's
 * children inherit), it does nothing but in a gateway's or a runner's main process. Every stamp is
 * `process.hrtime` (CLOCK_MONOTONIC, the clock perf stamps Redis's syscalls with), written to
 * `$PICKUP_HOP_DIR/pickup-hop-<role>-<pid>.txt` as `<ns> <label> <detail>`, flushed every 500 ms
 * and at exit (never on the path it stamps). `pickup-hop.ts` reads them.
 *
 * What it stamps, by wrapping prototypes the product's modules share (the same CJS instances):
 * - a socket's write reaching libuv (`Socket#_writeGeneric`: fd, bytes, whether it holds an
 *   EVALSHA) and its `data` event (fd, bytes), before any listener;
 * - ioredis's parsed reply (`DataHandler#returnReply`) for the commands of the hop: evalsha,
 *   bzpopmin, with the fd of its connection;
 * - in the runner, BullMQ's steps of the hand-off's take: `waitForJob` resolved (the pop's stand-in
 *   answered), `nextJobFromJobData` (ParkingWorker's `takeHanded` building the job), `Job.fromJSON`
 *   in and out, `processJob` (BullMQ's, under ParkingWorker's), `callProcessJob` (the processor).
 */
import fs, { appendFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const main = process.argv[1] ?? '';
const role = /gateway\/src\/main\.ts$/.test(main)
  ? 'gateway'
  : /runner\/src\/main\.ts$/.test(main)
    ? 'runner'
    : '';
if (role) {
  const out = `${process.env.PICKUP_HOP_DIR ?? '/tmp'}/pickup-hop-${role}-${process.pid}.txt`;
  /** @type {string[]} */
  let lines = [];
  const stamp = (label, detail = '') => {
    lines.push(`${process.hrtime.bigint()} ${label} ${detail}`);
  };
  const flush = () => {
    if (lines.length === 0) return;
    const text = `${lines.join('\n')}\n`;
    lines = [];
    appendFileSync(out, text);
  };
  setInterval(flush, 500).unref();
  process.on('exit', flush);
  // The wall clock of `performance` against the monotonic one, for the run's own stamps.
  stamp('clock', String(performance.timeOrigin + performance.now()));

  const fdOf = (socket) => socket?._handle?.fd ?? -1;
  const head = (data) => {
    if (typeof data === 'string') return data.slice(0, 48);
    if (Buffer.isBuffer(data)) return data.subarray(0, 48).toString('latin1');
    return '';
  };
  const S = net.Socket.prototype;
  const writeGeneric = S._writeGeneric;
  S._writeGeneric = function (writev, data, encoding, cb) {
    let bytes = 0;
    let evalsha = false;
    if (writev) {
      for (const c of data) {
        const chunk = c.chunk ?? c;
        bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
        if (!evalsha && /evalsha/i.test(head(chunk))) evalsha = true;
      }
    } else {
      bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
      evalsha = /evalsha/i.test(head(data));
    }
    stamp(evalsha ? 'write-evalsha' : 'write', `${fdOf(this)} ${bytes}`);
    return writeGeneric.call(this, writev, data, encoding, cb);
  };
  const emit = S.emit;
  S.emit = function (event, ...args) {
    if (event === 'data') stamp('data', `${fdOf(this)} ${args[0]?.length ?? 0}`);
    return emit.call(this, event, ...args);
  };

  const require = createRequire(main);
  const DataHandler = require('ioredis/built/DataHandler.js').default;
  const returnReply = DataHandler.prototype.returnReply;
  DataHandler.prototype.returnReply = function (reply) {
    const name = this.redis?.commandQueue?.peekFront?.()?.command?.name;
    if (name === 'evalsha' || name === 'bzpopmin') {
      stamp(`reply-${name}`, String(fdOf(this.redis.stream)));
      // Where the event loop's turn that read the reply ends (its microtasks run, the check phase).
      setImmediate(() => stamp(`turn-end-${name}`));
    }
    return returnReply.call(this, reply);
  };

  // Stamps a patch may add inside product code (`globalThis.__pickupHop?.(label)`).
  globalThis.__pickupHop = stamp;
  if (role === 'runner') {
    // The program's frame to its sandbox host: the engine writes it straight to the pipe's
    // descriptor (host-process.ts, `writeSync`/`writevSync` imported by name: the ESM bindings
    // follow the CJS object once `syncBuiltinESMExports` runs). Round 40 (`seq-stages`).
    const writeSync = fs.writeSync;
    fs.writeSync = function (fd, buf, ...rest) {
      stamp('pipe-write', `${fd} ${buf?.length ?? 0}`);
      return writeSync.call(this, fd, buf, ...rest);
    };
    const writevSync = fs.writevSync;
    fs.writevSync = function (fd, bufs, ...rest) {
      stamp('pipe-write', `${fd} ${bufs.reduce((n, b) => n + b.length, 0)}`);
      return writevSync.call(this, fd, bufs, ...rest);
    };
    syncBuiltinESMExports();
    const bullmq = require('bullmq');
    const W = bullmq.Worker.prototype;
    const waitForJob = W.waitForJob;
    W.waitForJob = async function (...args) {
      const r = await waitForJob.apply(this, args);
      stamp('waited', String(r));
      return r;
    };
    const nextJobFromJobData = W.nextJobFromJobData;
    W.nextJobFromJobData = function (jobData, ...rest) {
      if (jobData) stamp('take');
      return nextJobFromJobData.call(this, jobData, ...rest);
    };
    const processJob = W.processJob;
    W.processJob = function (...args) {
      stamp('processJob');
      return processJob.apply(this, args);
    };
    const callProcessJob = W.callProcessJob;
    W.callProcessJob = function (...args) {
      stamp('processor');
      return callProcessJob.apply(this, args);
    };
    const optsFromJSON = bullmq.Job.optsFromJSON;
    bullmq.Job.optsFromJSON = function (...args) {
      stamp('optsFromJSON<');
      const opts = optsFromJSON.apply(this, args);
      stamp('optsFromJSON>');
      return opts;
    };
    const fromJSON = bullmq.Job.fromJSON;
    bullmq.Job.fromJSON = function (...args) {
      stamp('fromJSON<');
      const job = fromJSON.apply(this, args);
      stamp('fromJSON>');
      return job;
    };
  }
}
