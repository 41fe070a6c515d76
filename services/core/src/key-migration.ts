/**
 * Moves a tenant's keys from the pre-Cluster layout (`islet:tenant:<id>` and
 * `islet:tenant:<id>:…`, no hash tag) to the slot-safe one (`islet:tenant:{t:<id>}…`, keys.ts),
 * so an installation upgraded in place keeps its tenants, connections, sessions and policies.
 *
 * Every gateway runs it at start (and refuses to start on a newer layout: KeyLayoutTooNewError) until one start finds nothing left to move (then `keyLayout`
 * records version 2 and later starts skip the keyspace scan); a lock lets one process do it at a
 * time, and it is idempotent (a moved key no longer matches). Each key is copied with DUMP/RESTORE (works across Cluster slots, keeps
 * the TTL) and then deleted; the in-flight SET becomes the ZSET the new layout keeps (scored with
 * the run's createdAt, or now). A key whose new name already exists is left in place and reported:
 * a newer replica already wrote there, and merging two values is not a guess to make silently.
 *
 * During a rolling update an old replica may still write old names after the last new one started;
 * those are moved at the next gateway start (until then: a session index or in-flight entry the
 * new replicas do not see, which costs a listing entry or a quota place, never a run).
 */
import { keys, tenantTag } from './keys.ts';
import type { Logger } from './logger.ts';
import { type Redis, redisNodes } from './redis.ts';

/**
 * The newest key layout this build knows: `keyLayout` holds it once no key of the pre-Cluster
 * layout is left. A later build that changes the layout raises it (and migrates forward).
 */
export const KEY_LAYOUT_VERSION = 2;
const LAYOUT_VERSION = String(KEY_LAYOUT_VERSION);

/**
 * Refuses a Redis whose key layout is newer than this build's: after `helm rollback` past a
 * layout migration an older gateway would read and write keys where they no longer are
 * (tenants, keys and settings would look missing, and new writes would split the data in two).
 * The way back is forward again, or a backup taken before the upgrade (charts/islet/README.md).
 */
export class KeyLayoutTooNewError extends Error {
  readonly found: string;
  constructor(found: string) {
    super(
      `Redis holds key layout version ${found}, newer than this build knows (${KEY_LAYOUT_VERSION}): ` +
        'it was written by a newer Islet. Upgrade again, or restore a backup taken before that upgrade ' +
        '(see "Backup, restore and rollback" in the chart README); starting would misread tenants, keys and settings.',
    );
    this.name = 'KeyLayoutTooNewError';
    this.found = found;
  }
}

/** Whether a `keyLayout` value (null: none written yet) is one this build can serve. */
export function keyLayoutKnown(found: string | null): boolean {
  return found === null || (/^\d+$/.test(found) && Number(found) <= KEY_LAYOUT_VERSION);
}
const OLD = /^islet:tenant:([a-z0-9][a-z0-9-]{0,62})(:.*)?$/;

export interface KeyMigrationResult {
  moved: number;
  /** Old keys left in place because their new name was taken. */
  conflicts: string[];
}

/** The new name of an old-layout key, or undefined when `key` is not one. */
export function migratedKeyName(key: string): string | undefined {
  const m = OLD.exec(key);
  if (!m?.[1]) return undefined;
  return `islet:tenant:${tenantTag(m[1])}${m[2] ?? ''}`;
}

export async function migrateKeyLayout(redis: Redis, logger?: Logger): Promise<KeyMigrationResult> {
  const result: KeyMigrationResult = { moved: 0, conflicts: [] };
  const found = await redis.get(keys.keyLayout());
  if (!keyLayoutKnown(found)) throw new KeyLayoutTooNewError(found!);
  if (found === LAYOUT_VERSION) return result;
  const lock = await redis.set(keys.keyMigrationLock(), String(process.pid), 'PX', 120_000, 'NX');
  if (lock !== 'OK') return result;
  try {
    for (const node of await redisNodes(redis)) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', 'islet:tenant:*', 'COUNT', 1000);
        cursor = next;
        for (const key of found) {
          const target = migratedKeyName(key);
          if (!target) continue;
          if (await moveKey(redis, key, target)) result.moved++;
          else result.conflicts.push(key);
        }
      } while (cursor !== '0');
    }
    // Only a scan that found nothing closes the migration: one that moved keys may have raced an
    // old replica still writing old names (a rolling update), so the next start looks again.
    if (result.moved === 0 && result.conflicts.length === 0)
      await redis.set(keys.keyLayout(), LAYOUT_VERSION);
  } finally {
    await redis.del(keys.keyMigrationLock());
  }
  if (result.moved > 0) logger?.info({ moved: result.moved }, 'moved tenant keys to the slot-safe layout');
  if (result.conflicts.length > 0)
    logger?.warn(
      { keys: result.conflicts.slice(0, 20), count: result.conflicts.length },
      'old-layout keys left in place: their new names already exist',
    );
  return result;
}

async function moveKey(redis: Redis, from: string, to: string): Promise<boolean> {
  if (from.endsWith(':inflight') && (await redis.type(from)) === 'set') {
    const ids = await redis.smembers(from);
    const now = Date.now();
    for (const id of ids) {
      const createdAt = Number(await redis.hget(keys.run(id), 'createdAt'));
      await redis.zadd(to, 'NX', Number.isFinite(createdAt) && createdAt > 0 ? createdAt : now, id);
    }
    await redis.del(from);
    return true;
  }
  const [dump, pttl] = await Promise.all([redis.dumpBuffer(from), redis.pttl(from)]);
  if (dump === null) return true; // gone meanwhile (expired, deleted)
  try {
    await redis.restore(to, Math.max(pttl, 0), dump);
  } catch (err) {
    if ((err as Error).message.includes('BUSYKEY')) return false;
    throw err;
  }
  await redis.del(from);
  return true;
}
