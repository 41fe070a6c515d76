/**
 * Reads that every request repeats for values that rarely change (an API key's identity, a
 * tenant, a tenant's connections), cached per key in this gateway. A change publishes the key on
 * `CACHE_CHANNEL` (`<kind>:<key>`, `<kind>:*` for all of a kind) and every replica drops it.
 * Pub/sub is at most once, so, as in core's settings cache, nothing is cached while the
 * subscriber is not ready (messages may have been missed) and no entry is older than `maxAgeMs`.
 * Misses (null) are not cached: a key or connection created on another replica is seen at once.
 */
import { BoundedMap, channels } from '@islet/core';
import type { Redis } from 'ioredis';

/** One channel for every cache of every gateway replica. */
const CACHE_CHANNEL = channels.gatewayCache;

interface ReadCache<T> {
  get(key: string): Promise<T | null>;
  /**
   * The value `get` would give now, without a promise, when it is cached and its read has come
   * back (fresh, not dropped since: as `get`'s hit); `undefined` otherwise (then call `get`).
   */
  peek(key: string): T | undefined;
  /** Drops `key` here and on every replica (call after writing it). */
  invalidate(key: string): Promise<void>;
}

export interface CacheHub {
  cache<T>(kind: string, load: (key: string) => Promise<T | null>, maxAgeMs?: number): ReadCache<T>;
  /** Whether messages are arriving (none can have been missed since `since()`). */
  listening(): boolean;
  /** When the subscription last (re)started, ms: anything published before may have been missed. */
  since(): number;
  /** Messages of `kind` (with '*' when the subscription restarts, as caches are dropped). */
  on(kind: string, fn: (key: string) => void): void;
  publish(kind: string, key: string): Promise<void>;
  close(): void;
}

export function createCacheHub(
  subscriber: Redis,
  publisher: Redis,
  options: { maxEntries?: number } = {},
): CacheHub {
  const maxEntries = options.maxEntries ?? 10_000;
  const droppers = new Map<string, (key: string) => void>();
  const dropAll = () => {
    for (const drop of droppers.values()) drop('*');
  };
  let listening = false;
  let since = Date.now();
  const onMessage = (channel: string, message: string) => {
    if (channel !== CACHE_CHANNEL) return;
    const colon = message.indexOf(':');
    if (colon > 0) droppers.get(message.slice(0, colon))?.(message.slice(colon + 1));
  };
  const onDown = () => {
    listening = false;
    dropAll();
  };
  const subscribe = () =>
    subscriber.subscribe(CACHE_CHANNEL).then(
      () => {
        listening = true;
        since = Date.now();
        dropAll();
      },
      () => undefined,
    );
  subscriber.on('message', onMessage);
  subscriber.on('close', onDown);
  subscriber.on('reconnecting', onDown);
  subscriber.on('ready', () => void subscribe());
  if (subscriber.status === 'ready') void subscribe();

  return {
    cache<T>(kind: string, load: (key: string) => Promise<T | null>, maxAgeMs = 5000): ReadCache<T> {
      // `read`: the value once its read came back (a null one is not kept: see `get`).
      const entries = new BoundedMap<
        string,
        { value: Promise<T | null>; at: number; generation: number; read?: T }
      >(maxEntries);
      const fresh = (hit: { at: number; generation: number } | undefined, now: number) =>
        hit !== undefined && hit.generation === generation && now - hit.at < maxAgeMs;
      // Bumped on every drop, so a read that started before a change is never cached after it.
      let generation = 0;
      droppers.set(kind, (key) => {
        generation++;
        if (key === '*') entries.clear();
        else entries.delete(key);
      });
      return {
        get(key) {
          if (!listening) return load(key);
          const now = Date.now();
          const hit = entries.get(key);
          if (hit && fresh(hit, now)) return hit.value;
          const value = load(key);
          const entry: { value: Promise<T | null>; at: number; generation: number; read?: T } = {
            value,
            at: now,
            generation,
          };
          entries.set(key, entry);
          value.then(
            (v) => {
              if (v !== null) entry.read = v;
              else if (entries.get(key) === entry) entries.delete(key);
            },
            () => {
              if (entries.get(key) === entry) entries.delete(key);
            },
          );
          return value;
        },
        peek(key) {
          if (!listening) return undefined;
          const hit = entries.get(key);
          return hit && fresh(hit, Date.now()) ? hit.read : undefined;
        },
        async invalidate(key) {
          droppers.get(kind)?.(key);
          await publisher.publish(CACHE_CHANNEL, `${kind}:${key}`);
        },
      };
    },
    listening: () => listening,
    since: () => since,
    on(kind, fn) {
      droppers.set(kind, fn);
    },
    async publish(kind, key) {
      await publisher.publish(CACHE_CHANNEL, `${kind}:${key}`);
    },
    close() {
      subscriber.off('message', onMessage);
      subscriber.off('close', onDown);
      subscriber.off('reconnecting', onDown);
      dropAll();
      droppers.clear();
    },
  };
}
