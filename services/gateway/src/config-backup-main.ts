/**
 * `node services/gateway/src/config-backup-main.ts export > islet-config.jsonl`
 * `node services/gateway/src/config-backup-main.ts import < islet-config.jsonl`
 *
 * Exports or imports tenants, API keys, connections, policies and settings (config-backup-store.ts)
 * with the gateway's own configuration (ISLET_REDIS_* and their secret files), e.g. through
 * `kubectl exec -i deploy/<release>-gateway -- node services/gateway/src/config-backup-main.ts …`.
 * A summary goes to stderr; stdout carries only the backup.
 */
import { createInterface } from 'node:readline';
import { createRedis, loadConfig } from '@islet/core';
import { createConfigBackup } from './config-backup-store.ts';

const command = process.argv[2];
if (command !== 'export' && command !== 'import') {
  process.stderr.write('usage: config-backup-main.ts export > file.jsonl | import < file.jsonl\n');
  process.exit(2);
}
const config = loadConfig(process.env);
const redis = createRedis(config, { maxRetriesPerRequest: 3 });
redis.on('error', () => {});
const backup = createConfigBackup(redis);
try {
  const counts =
    command === 'export'
      ? await backup.export(
          (line) =>
            new Promise<void>((resolve, reject) =>
              process.stdout.write(`${line}\n`, (err) => (err ? reject(err) : resolve())),
            ),
        )
      : await backup.import(createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY }));
  process.stderr.write(
    `${command === 'export' ? 'exported' : 'imported'} ${counts.tenants} tenants, ${counts.apiKeys} API keys, ${counts.keys} Redis keys\n`,
  );
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`${command} failed: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  redis.disconnect();
}
