/**
 * `node test/bench/hub-messages.ts`: the gateway's event hub (`services/gateway/src/event-hub.ts`)
 * as a long-lived gateway runs it, in process: `RUNS` runs' end messages (default 40,000, each a
 * distinct run id, with a `Prefer: wait` listener as the submit's waiter holds), delivered by a
 * fake subscriber, main-thread CPU µs a message (`process.threadCpuUsage`: not the GC's helper threads) in windows of `WINDOW`
 * (default 5,000). A gateway remembers runs it heard about (`quietSince`); what that memory costs
 * a message once it is full (past 10,000 runs) is what this reads. `ROUNDS` (default 3) repeats
 * it on fresh hubs; every round's windows are printed. `PAYLOAD_BYTES` (default 200): the pushed end's
 * size; each message is then a string of its own as ioredis decodes it, and each round also prints
 * the heap the hub still holds after it (a full GC before and after: a remembered id cut from its
 * message held the whole message, round 29).
 */
import { EventEmitter } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { channels } from '@islet/core';
import type { Redis } from 'ioredis';
import { createEventHub } from '../../services/gateway/src/event-hub.ts';

const RUNS = Number(process.env.RUNS ?? 40_000);
const WINDOW = Number(process.env.WINDOW ?? 5_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
// The end's payload as a waited run's end carries it (its size only moves the string's slice).
const PAYLOAD_BYTES = Number(process.env.PAYLOAD_BYTES ?? 200);
const payload = JSON.stringify([['status', 'Completed', 'result', 'x'.repeat(PAYLOAD_BYTES)], []]);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

for (let round = 1; round <= ROUNDS; round++) {
  const emitter = new EventEmitter();
  const subscriber = Object.assign(emitter, { subscribe: async () => 1 }) as unknown as Redis;
  const hub = createEventHub(subscriber);
  await hub.start();
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const windows: string[] = [];
  let heard = 0;
  let from = process.threadCpuUsage();
  for (let i = 0; i < RUNS; i++) {
    const id = `0b9e${i.toString(16).padStart(8, '0')}-5a3c-4e7f-9d21-6f0e2c1b7a45`;
    const off = hub.listen(id, () => heard++);
    emitter.emit('message', channels.runEvents, Buffer.from(`${id} end ${payload}`).toString());
    off();
    if ((i + 1) % WINDOW === 0) {
      const used = process.threadCpuUsage(from);
      windows.push(((used.user + used.system) / WINDOW).toFixed(2));
      from = process.threadCpuUsage();
    }
  }
  gc();
  const held = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
  hub.close();
  if (heard !== RUNS) throw new Error(`heard ${heard} of ${RUNS}`);
  console.log(
    `round ${round}: CPU µs a message, windows of ${WINDOW} runs: ${windows.join(' ')}; heap held after ${RUNS} ends of ${PAYLOAD_BYTES} B: ${held.toFixed(1)} MB`,
  );
}
