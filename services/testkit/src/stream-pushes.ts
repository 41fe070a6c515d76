/**
 * Counting readable-stream pushes, for the tests that a socket read through `onread` takes none
 * (core's redis-direct-read.ts, engine's host-stdout.ts): `Readable.prototype.push` wrapped until
 * `stop()`, each push with data (not EOF) on a stream `match` accepts recorded under its `key`.
 */
import { Readable } from 'node:stream';

export interface StreamPushes {
  /** Pushes so far by key, in the order their first push came. */
  readonly pushed: Map<string | number, number>;
  /** All pushes so far. */
  total(): number;
  /** Puts `Readable.prototype.push` back (call it in a `finally`). */
  stop(): void;
}

export function countStreamPushes(
  match: (stream: Readable) => boolean,
  key: (stream: Readable) => string | number = () => 'all',
): StreamPushes {
  const push = Readable.prototype.push;
  const pushed = new Map<string | number, number>();
  Readable.prototype.push = function (this: Readable, ...args: Parameters<Readable['push']>) {
    if (args[0] !== null && match(this)) {
      const k = key(this);
      pushed.set(k, (pushed.get(k) ?? 0) + 1);
    }
    return push.apply(this, args);
  };
  return {
    pushed,
    total: () => [...pushed.values()].reduce((a, b) => a + b, 0),
    stop: () => {
      Readable.prototype.push = push;
    },
  };
}
