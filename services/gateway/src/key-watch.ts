/**
 * Ends what a key holds open once the key stops working: its event streams. A revoke (or a
 * rotation without grace) announces the key's hash as `key-revoked` on the gateway cache channel,
 * which reaches every replica's open streams at once; pub/sub is at most once, so each stream also
 * checks its key about once a second (through the identity cache, dropped on the same channel,
 * so the check rarely costs a Redis read) and when the key's rotation grace or expiry passes.
 */
import type { ApiKeyIdentity } from '@islet/core';
import type { CacheHub } from './read-cache.ts';

/** How often an open stream re-checks its key, ms (a missed announcement costs at most this). */
const KEY_RECHECK_MS = 1000;

export interface KeyWatch {
  /** Calls `gone` once when the key with this hash stops working; returns the unwatch function. */
  watch(hash: string, gone: () => void): () => void;
}

export function createKeyWatch(
  resolveHash: (hash: string) => Promise<ApiKeyIdentity | null>,
  caches?: CacheHub,
  recheckMs = KEY_RECHECK_MS,
): KeyWatch {
  const watchers = new Map<string, Set<() => void>>();
  caches?.on('key-revoked', (hash) => {
    // A restarted subscription may have missed announcements: the periodic checks cover them.
    if (hash === '*') return;
    for (const fn of watchers.get(hash) ?? []) fn();
  });
  return {
    watch(hash, gone) {
      let done = false;
      const set = watchers.get(hash) ?? new Set<() => void>();
      watchers.set(hash, set);
      const fire = () => {
        if (done) return;
        stop();
        gone();
      };
      const timer = setInterval(() => {
        resolveHash(hash).then(
          (identity) => {
            if (!identity) fire();
          },
          () => undefined,
        );
      }, recheckMs);
      timer.unref();
      set.add(fire);
      function stop() {
        done = true;
        clearInterval(timer);
        set.delete(fire);
        if (set.size === 0) watchers.delete(hash);
      }
      return stop;
    },
  };
}
