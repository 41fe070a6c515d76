/**
 * `node test/bench/pubsub-wake-cost.ts`: what one pub/sub message costs the process it wakes, as a
 * gateway's event hub receives a run's `running` message when a sequential client's runs arrive
 * one at a time: a subscriber in a child process (its own CPU clock) on a real Redis, `N` messages
 * (default 5000) published 1 ms apart, so every message is a wake-up, an `epoll_wait`, a read and
 * the hub's parse of its own; prints the subscriber's CPU per message (user + system, its idle
 * loop's ticks included, as a gateway's), and Redis's CPU per PUBLISH with and without it.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { startRedis } from '@islet/testkit';

const N = Number(process.env.N ?? 5000);
const CHANNEL = 'bench:run-events';

if (process.argv[2] === 'subscriber') {
  const sub = createRedis(process.argv[3] as string);
  let seen = 0;
  let start = process.cpuUsage();
  sub.on('message', (_c: string, m: string) => {
    // What the hub does with a message: find the id and the tag, look up listeners.
    const space = m.indexOf(' ');
    const id = space < 0 ? m : m.slice(0, space);
    if (id === '') return;
    seen++;
    if (seen === 1) start = process.cpuUsage();
    if (seen === N) {
      const used = process.cpuUsage(start);
      process.send?.({ usPerMessage: (used.user + used.system) / (N - 1) });
    }
  });
  await sub.subscribe(CHANNEL);
  // What the process costs idle over as long as the messages take (its timers, the runtime's).
  const idleFrom = process.cpuUsage();
  await new Promise((r) => setTimeout(r, N * 1.1));
  const idle = process.cpuUsage(idleFrom);
  process.send?.({ ready: true, idleUsPerMessage: (idle.user + idle.system) / N });
} else {
  const server = await startRedis({ appendOnly: false });
  const pub = createRedis(server.url);
  const redisPid = Number((await pub.info('server')).match(/process_id:(\d+)/)?.[1]);
  const redisCpuMs = () => {
    const f = readFileSync(`/proc/${redisPid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  const publishAll = async (awaitEach = true) => {
    const before = redisCpuMs();
    for (let i = 0; i < N; i++) {
      const p = pub.publish(CHANNEL, `run-${i} running`);
      if (awaitEach) {
        await p;
        await new Promise((r) => setTimeout(r, 1));
      }
    }
    await pub.ping();
    return ((redisCpuMs() - before) * 1000) / N;
  };
  try {
    const alone = await publishAll();
    const child = fork(new URL(import.meta.url).pathname, ['subscriber', server.url]);
    let idleUs = 0;
    let withSubscriber: Promise<number> | undefined;
    const result = new Promise<number>((resolve) =>
      child.on('message', (m: { ready?: boolean; usPerMessage?: number; idleUsPerMessage?: number }) => {
        if (m.idleUsPerMessage !== undefined) idleUs = m.idleUsPerMessage;
        if (m.ready) withSubscriber = publishAll();
        if (m.usPerMessage !== undefined) resolve(m.usPerMessage);
      }),
    );
    const us = await result;
    console.log(`redis µs/PUBLISH without a subscriber: ${alone.toFixed(1)}`);
    console.log(`redis µs/PUBLISH with a subscriber: ${(await withSubscriber)?.toFixed(1)}`);
    console.log(
      `subscriber CPU per message, one wake-up each: ${us.toFixed(1)} µs (${N} messages); idle over the same time: ${idleUs.toFixed(1)} µs`,
    );
    child.kill();
  } finally {
    pub.disconnect();
    await server.stop();
  }
}
