/**
 * A logical export of what an installation is configured with — tenants, their API keys (hashes
 * only: Redis never holds a usable key), connections, MCP and run policies, platform settings and
 * the key layout version — as JSON lines, and its import. Runs, journals and decisions are not in
 * it: they are transient work (and retained for hours), not configuration; an RDB/AOF snapshot of
 * Redis is the backup for those (charts/islet/README.md, "Backup, restore and rollback").
 *
 * JSON rather than DUMP: a DUMP payload only restores into a Redis of the same or a newer RDB
 * version, and a restore drill into a managed Redis of another version must still work.
 * Connections keep their secrets sealed: restore into an installation with the same seal keys.
 */
import { KEY_LAYOUT_VERSION, keyLayoutKnown, keys, type Redis } from '@islet/core';
import { journalKeys } from '@islet/runs';
import { z } from 'zod';

const BACKUP_FORMAT = 'islet-config-backup';
const BACKUP_VERSION = 1;

interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: number;
  /** The key layout the keys are named in (`islet:key-layout`; null when none was recorded). */
  keyLayout: string | null;
  exportedAt: string;
}

type KeyValue =
  | { type: 'string'; value: string }
  | { type: 'hash'; value: Record<string, string> }
  | { type: 'set'; value: string[] };

/** One Redis key; `pttlMs` when it expires (an API key with an expiry, a rotated key's grace). */
type BackupRecord = KeyValue & { key: string; pttlMs?: number };

const recordSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('string'), value: z.string() }),
    z.object({ type: z.literal('hash'), value: z.record(z.string(), z.string()) }),
    z.object({ type: z.literal('set'), value: z.array(z.string()) }),
  ])
  .and(z.object({ key: z.string().min(1), pttlMs: z.number().int().positive().optional() }));

interface BackupCounts {
  tenants: number;
  apiKeys: number;
  keys: number;
}

/** The configuration keys of one tenant (its API key identities are listed from its key hash). */
function tenantKeys(tenant: string): string[] {
  return [
    keys.tenant(tenant),
    keys.tenantApiKeys(tenant),
    keys.tenantApiKeysUsed(tenant),
    keys.connections(tenant),
    keys.mcpSettings(tenant),
    journalKeys().runPolicy(tenant),
  ];
}

/** The secret hashes a tenant's key listing names (a rotated key's previous one included). */
function keyHashes(listing: Record<string, string>): string[] {
  const hashes: string[] = [];
  for (const raw of Object.values(listing)) {
    const info = JSON.parse(raw) as { hash?: string; previous?: { hash?: string } };
    if (info.hash) hashes.push(info.hash);
    if (info.previous?.hash) hashes.push(info.previous.hash);
  }
  return hashes;
}

export function createConfigBackup(redis: Redis) {
  async function read(key: string): Promise<BackupRecord | undefined> {
    const type = await redis.type(key);
    let record: BackupRecord;
    if (type === 'string') record = { key, type, value: (await redis.get(key)) ?? '' };
    else if (type === 'hash') record = { key, type, value: await redis.hgetall(key) };
    else if (type === 'set') record = { key, type, value: (await redis.smembers(key)).sort() };
    else if (type === 'none') return undefined;
    else throw new Error(`${key}: unexpected Redis type ${type}`);
    const pttl = await redis.pttl(key);
    if (pttl > 0) record.pttlMs = pttl;
    return record;
  }

  return {
    /** Writes the header, then one record per key; returns what it wrote. */
    async export(write: (line: string) => void | Promise<void>): Promise<BackupCounts> {
      const header: BackupHeader = {
        format: BACKUP_FORMAT,
        version: BACKUP_VERSION,
        keyLayout: await redis.get(keys.keyLayout()),
        exportedAt: new Date().toISOString(),
      };
      await write(JSON.stringify(header));
      const counts: BackupCounts = { tenants: 0, apiKeys: 0, keys: 0 };
      const emit = async (record: BackupRecord | undefined) => {
        if (!record) return;
        counts.keys++;
        await write(JSON.stringify(record));
      };
      for (const key of [keys.keyLayout(), keys.settings(), keys.tenants()]) await emit(await read(key));
      for (const tenant of (await redis.smembers(keys.tenants())).sort()) {
        counts.tenants++;
        for (const key of tenantKeys(tenant)) await emit(await read(key));
        for (const hash of keyHashes(await redis.hgetall(keys.tenantApiKeys(tenant)))) {
          const identity = await read(keys.apiKey(hash));
          if (identity) counts.apiKeys++;
          await emit(identity);
        }
      }
      return counts;
    },

    /**
     * Writes every record of a backup, replacing a key of the same name. Refuses a backup of
     * another format or of a key layout newer than this build's before writing anything.
     */
    async import(lines: AsyncIterable<string> | Iterable<string>): Promise<BackupCounts> {
      // Read and check the whole file before writing: a bad line, another format, a newer layout
      // or a key that is not configuration writes nothing (the file is small: no runs in it).
      let header: BackupHeader | undefined;
      const records: BackupRecord[] = [];
      let n = 0;
      for await (const line of lines) {
        n++;
        if (!line.trim()) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          throw new Error(`line ${n}: not JSON`);
        }
        if (!header) {
          header = parsed as BackupHeader;
          if (header.format !== BACKUP_FORMAT || header.version !== BACKUP_VERSION)
            throw new Error(`not an ${BACKUP_FORMAT} version ${BACKUP_VERSION} file`);
          if (!keyLayoutKnown(header.keyLayout))
            throw new Error(
              `the backup's key layout ${header.keyLayout} is newer than this build knows (${KEY_LAYOUT_VERSION}): import it with the Islet version that exported it`,
            );
          continue;
        }
        const record = recordSchema.safeParse(parsed);
        if (!record.success)
          throw new Error(`line ${n}: not a backup record (${record.error.issues[0]?.message})`);
        records.push(record.data as BackupRecord);
      }
      if (!header) throw new Error('empty backup');
      // What an export writes, and nothing else: the fixed keys, each listed tenant's keys, and
      // API key identities.
      const tenants = records.find((r) => r.key === keys.tenants() && r.type === 'set')?.value as
        | string[]
        | undefined;
      const allowed = new Set([
        keys.keyLayout(),
        keys.settings(),
        keys.tenants(),
        ...(tenants ?? []).flatMap(tenantKeys),
      ]);
      const apiKeyPrefix = keys.apiKey('');
      for (const r of records)
        if (!allowed.has(r.key) && !r.key.startsWith(apiKeyPrefix))
          throw new Error(`${r.key}: not a configuration key an export writes`);
      const counts: BackupCounts = { tenants: tenants?.length ?? 0, apiKeys: 0, keys: 0 };
      for (const record of records) {
        // One record at a time, whole: the key is never seen half written.
        const tx = redis.multi().del(record.key);
        if (record.type === 'string') tx.set(record.key, record.value);
        else if (record.type === 'hash') {
          if (Object.keys(record.value).length) tx.hset(record.key, record.value);
        } else if (record.value.length) tx.sadd(record.key, ...record.value);
        if (record.pttlMs) tx.pexpire(record.key, record.pttlMs);
        await tx.exec();
        counts.keys++;
        if (record.key.startsWith(apiKeyPrefix)) counts.apiKeys++;
      }
      return counts;
    },
  };
}
