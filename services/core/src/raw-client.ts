/**
 * The ioredis client behind BullMQ's Proxy of it (BullMQ 5.8x's `createIORedisClient`,
 * `ioredis-client.js`), for the hot reads and calls made on a runner's worker clients: every
 * property read through that Proxy runs its `get` trap (an `in` on its override table, a
 * `Reflect.get`, a `hasOwnProperty` and a bound-method cache for functions). A script call's
 * `options` and `sendCommand`, a reply's DataHandler reads (`condition`, `status`,
 * `commandQueue`), the hand-off's pop: ~22 µs a run of the runner's CPU profile at one client on
 * d45370e7 (test/bench/README.md round 51 `runner-cpu`).
 *
 * The raw client is what the Proxy itself calls: it returns the client's own and prototype
 * functions bound to the client ("`this === target`", BullMQ's words), so an EventEmitter method
 * that answers `this` answers the client behind it. `removeListener` of a listener never added is
 * such a method and changes nothing. Writes through the Proxy (a test's `redis.sendCommand = spy`,
 * `vi.spyOn`) land on that client too, so a spy set either way is the one called. Anything the
 * Proxy does not pass through — its own `__bullmq_iredis` mark still answered, no EventEmitter, a
 * test double — is used as it is, so with another BullMQ the calls go through its Proxy as before.
 */
const UNWRAP = Symbol('islet.rawClient');
const noop = (): void => undefined;

const raws = new WeakMap<object, object>();

function unwrap(client: object): object {
  const remove = (client as { removeListener?: unknown }).removeListener;
  if (typeof remove !== 'function') return client;
  const self: unknown = remove.call(client, UNWRAP, noop);
  if (self === null || typeof self !== 'object' || self === client) return client;
  const raw = self as { __bullmq_iredis?: unknown; sendCommand?: unknown };
  // BullMQ's Proxy answers its mark from its own table; the client behind it has none.
  return raw.__bullmq_iredis === true || typeof raw.sendCommand !== 'function' ? client : raw;
}

/** `client`'s raw ioredis client when it is BullMQ's Proxy of one, else `client`; kept a client. */
export function rawClient<T extends object>(client: T): T {
  let raw = raws.get(client);
  if (raw === undefined) {
    raw = unwrap(client);
    raws.set(client, raw);
  }
  return raw as T;
}
