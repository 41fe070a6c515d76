/**
 * What the messages of a run and of a binding call cost at the least on this machine, with none of
 * Islet's work in them: the p50 round trip to an idle echo process over loopback TCP and over a
 * pipe, and of a one-key write to a redis-server with `appendfsync always` (Redis answers after its
 * fsync, as the cluster's does). Each round trip starts after a 1 ms pause, as in a sequential
 * run, where every process sleeps between its messages (a hot loop reads faster than any run sees).
 *
 * A sequential trivial run's path, message by message, on one server with an idle runner (the
 * default: `ISLET_IDLE_HANDOFF` on, the fair share on). A write's round trip (`fsyncWriteMs`: there,
 * the fsync, back) counts once even where its answer goes to another process than the writer (the
 * same one-way hop back, in parallel with the writer's own reply): client → gateway (half a TCP
 * round trip); the admission script with BullMQ's add, whose hand-off answers the runner blocked on
 * its hand-off key with the job, moved to active with its lease and attempt start (one fsync'd
 * write); the sandbox host (a pipe round trip); the end script, whose publish wakes the gateway
 * (one fsync'd write); the response (half a TCP round trip): 1 TCP round trip, 2 fsync'd writes,
 * 1 pipe round trip (3 writes without the hand-off: the marker wakes the runner, whose fetch,
 * `fetch-lease-begin-11`, is a write of its own). A lone binding call's: runner → gateway and
 * back, the claim, the App and back, the outcome, the host: 2 TCP round trips, 2 fsync'd writes,
 * 1 pipe round trip. The bench's figures divided by these floors say how much of them is the
 * processes' own work (CPU per message), not the messages. (Before round 25 the run's floor counted
 * 1.5 TCP round trips, the pick-up's half a round trip more and the end's half a round trip more
 * than these: a hop counted twice, once as a write's answer and once as the wake-up it carries.)
 *
 * With the fair share on (default settings, as the cluster bench runs) a run also takes its slot
 * lease: on one server (the bench's) inside the hand-off (or the fetch's script) and given back
 * inside the end script, so no write of its own; on a Cluster the fetch (`moveToActive`), the
 * lease and `beginAttempt` are three writes of their own (`runShareMs`: 5 fsync'd writes in all).
 * The two notification stages on their own, from the stamps the stage table uses: enqueue (the
 * gateway's stamp before its script is sent) → pick-up is the admission with the add and its
 * hand-off to the idle runner (`pickupMs`: 1 fsync'd write); end sent (the runner's stamp before
 * the end script is sent) → response received is the end script, its publish to the gateway and
 * the response (`endMs`: 1 fsync'd write and half a TCP round trip).
 */
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { createRedis } from '@islet/core';
import { spawnOwned, startRedis, stopOwned } from '@islet/testkit';
import { Redis } from 'ioredis';
import { pct } from './baselines.ts';

export interface MessageFloor {
  /** p50 round trip to an idle node process over loopback TCP, ms. */
  tcpMs: number;
  /** p50 round trip to an idle node process over a pipe (stdin → stdout), ms. */
  pipeMs: number;
  /** p50 of a SET to an idle redis-server with `appendfsync always`, ms (its fsync included). */
  fsyncWriteMs: number;
  /** 1 TCP round trip + 2 fsync'd writes + 1 pipe round trip, ms (one server, idle runner, hand-off). */
  runMs: number;
  /** 2 TCP round trips + 2 fsync'd writes + 1 pipe round trip, ms. */
  callMs: number;
  /** 1 TCP round trip + 5 fsync'd writes + 1 pipe round trip (a Cluster's: no hand-off; fetch, lease, `beginAttempt` apart), ms. */
  runShareMs: number;
  /** 1 fsync'd write (enqueue → pick-up with the hand-off), ms. */
  pickupMs: number;
  /** 1 fsync'd write + 0.5 TCP round trip (end sent → response received), ms. */
  endMs: number;
}

const PAUSE_MS = 1;

async function p50Of(rounds: number, once: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await once();
  const lat: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    const t = performance.now();
    await once();
    lat.push(performance.now() - t);
  }
  return pct(lat, 50);
}

/** Owned: it dies with this process whatever happens (the TCP echo would otherwise listen on). */
function echoChild(source: string): ChildProcess {
  return spawnOwned(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
}

/** One byte out, the first chunk back. */
function roundTrip(write: (b: string) => void, readable: NodeJS.ReadableStream): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      readable.once('data', () => resolve());
      write('x');
    });
}

export async function messageFloor(rounds = 300): Promise<MessageFloor> {
  const tcpEcho = echoChild(
    "const s = require('net').createServer((c) => { c.setNoDelay(true); c.on('data', (d) => c.write(d)); });" +
      "s.listen(0, '127.0.0.1', () => process.stdout.write(s.address().port + '\\n'));",
  );
  const pipeEcho = echoChild("process.stdin.on('data', (d) => process.stdout.write(d));");
  const redisServer = await startRedis({ appendFsync: 'always' }).catch(async (e: unknown) => {
    await Promise.all([stopOwned(tcpEcho), stopOwned(pipeEcho)]);
    throw e;
  });
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  let socket: ReturnType<typeof connect> | undefined;
  try {
    const port = await new Promise<number>((resolve, reject) => {
      tcpEcho.once('exit', () => reject(new Error('the TCP echo process ended')));
      tcpEcho.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    });
    const s = connect(port, '127.0.0.1');
    socket = s;
    s.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      s.once('connect', resolve);
      s.once('error', reject);
    });
    const tcpMs = await p50Of(
      rounds,
      roundTrip((b) => s.write(b), s),
    );
    const pipeMs = await p50Of(
      rounds,
      roundTrip((b) => pipeEcho.stdin!.write(b), pipeEcho.stdout!),
    );
    const fsyncWriteMs = await p50Of(rounds, () => redis.set('floor', 'x'));
    return {
      tcpMs,
      pipeMs,
      fsyncWriteMs,
      runMs: tcpMs + 2 * fsyncWriteMs + pipeMs,
      callMs: 2 * tcpMs + 2 * fsyncWriteMs + pipeMs,
      runShareMs: tcpMs + 5 * fsyncWriteMs + pipeMs,
      pickupMs: fsyncWriteMs,
      endMs: fsyncWriteMs + 0.5 * tcpMs,
    };
  } finally {
    socket?.destroy();
    redis.disconnect();
    await Promise.all([stopOwned(tcpEcho), stopOwned(pipeEcho), redisServer.stop()]);
  }
}

/**
 * The floor's fsync'd write timed again on the cluster's Redis while a bench's calls run (a
 * SETRANGE nothing else sends, every 10 ms): on a machine others load, a floor taken minutes apart
 * says little. `stop` ends it and closes its client; `ms` holds each write's time.
 */
export function probeFsyncDuring(redisUrl: string): { ms: number[]; stop: () => Promise<void> } {
  const probe = createRedis(redisUrl);
  const ms: number[] = [];
  let probing = true;
  const probed = (async () => {
    while (probing) {
      await new Promise((r) => setTimeout(r, 10));
      const t = performance.now();
      await probe.setrange('bench:fsync-probe', 0, 'x');
      ms.push(performance.now() - t);
    }
  })();
  return {
    ms,
    stop: async () => {
      probing = false;
      await probed;
      probe.disconnect();
    },
  };
}
