/**
 * Platform settings read through a cache: every run read them (runner and gateway), one Redis
 * round trip each, for a value an admin changes rarely. The settings CAS publishes on
 * `channels.settings`; a message drops the cached value. Pub/sub is at most once, so the cache is
 * also dropped whenever the subscriber connection is not ready (messages may have been missed),
 * and no cached value is older than `maxAgeMs` whatever happens.
 */
import type { Redis } from 'ioredis';
import { channels } from './keys.ts';
import type { PlatformSettings, SettingsStore } from './settings-store.ts';

export interface SettingsCacheOptions {
  /** Longest a cached value is used without a re-read, ms. Default 2000. */
  maxAgeMs?: number;
}

export function createSettingsCache(
  store: SettingsStore,
  subscriber: Redis,
  options: SettingsCacheOptions = {},
): SettingsStore & {
  /**
   * The value `get` would give now without a promise, when it is cached and its read has come
   * back (fresh, not dropped since: as `get`'s hit); `undefined` otherwise (then call `get`).
   */
  peek(): PlatformSettings | undefined;
  close(): void;
} {
  const maxAgeMs = options.maxAgeMs ?? 2000;
  // `read`: the value once its read came back.
  let cached:
    | { value: Promise<PlatformSettings>; at: number; generation: number; read?: PlatformSettings }
    | undefined;
  // Bumped on every invalidation, so a read that started before a change is never cached after it.
  let generation = 0;
  let listening = false;
  const invalidate = () => {
    generation++;
    cached = undefined;
  };
  const onMessage = (channel: string) => {
    if (channel === channels.settings) invalidate();
  };
  const onDown = () => {
    listening = false;
    invalidate();
  };
  subscriber.on('message', onMessage);
  subscriber.on('close', onDown);
  subscriber.on('reconnecting', onDown);
  const subscribe = () =>
    subscriber.subscribe(channels.settings).then(
      () => {
        listening = true;
        invalidate();
      },
      () => undefined,
    );
  subscriber.on('ready', () => void subscribe());
  if (subscriber.status === 'ready') void subscribe();

  const fresh = (now: number) =>
    cached !== undefined && cached.generation === generation && now - cached.at < maxAgeMs;

  return {
    get() {
      if (!listening) return store.get();
      const now = Date.now();
      if (cached && fresh(now)) return cached.value;
      const value = store.get();
      const entry: NonNullable<typeof cached> = { value, at: now, generation };
      cached = entry;
      value.then(
        (v) => {
          entry.read = v;
        },
        () => {
          if (cached === entry) cached = undefined;
        },
      );
      return value;
    },
    peek() {
      return listening && fresh(Date.now()) ? cached?.read : undefined;
    },
    async update(expectedVersion, patch) {
      const res = await store.update(expectedVersion, patch);
      invalidate();
      return res;
    },
    close() {
      subscriber.off('message', onMessage);
      subscriber.off('close', onDown);
      subscriber.off('reconnecting', onDown);
      invalidate();
    },
  };
}
