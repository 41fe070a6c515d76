/** Operator process entry: configuration from the environment, in-cluster credentials, signals. */

import { createRedis, scrubSecretEnv } from '@islet/core';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { loadOperatorConfig, OPERATOR_SECRET_VARIABLES } from './config.ts';
import { startOperator } from './operator.ts';

const config = loadOperatorConfig(process.env);
scrubSecretEnv(process.env, OPERATOR_SECRET_VARIABLES);
const log = pino({
  level: config.ISLET_LOG_LEVEL,
  redact: ['*.password', '*.token', 'config.ISLET_REDIS_URL'],
});
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault(); // in a pod: the ServiceAccount token and the API server's CA
const redis = createRedis(config, { maxRetriesPerRequest: 3, lazyConnect: false });
redis.on('error', (err) => log.warn({ err: err.message }, 'redis error'));

const operator = await startOperator({ config, kubeConfig, redis, log });
log.info(
  { namespace: config.ISLET_NAMESPACE, metricsPort: operator.metricsPort() },
  'islet operator started',
);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: releasing the lease');
    void operator
      .stop()
      .then(() => redis.quit())
      .finally(() => process.exit(0));
  });
}
