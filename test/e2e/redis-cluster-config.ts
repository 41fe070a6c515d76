/**
 * The services' Redis configuration for a test Redis Cluster (the same variables a pod gets):
 * cluster mode, every node as a seed, the password when the cluster has one.
 */
import type { RedisConfig } from '@islet/core';
import type { RedisCluster } from '@islet/testkit';

export function clusterRedisConfig(cluster: RedisCluster): RedisConfig {
  return {
    ISLET_REDIS_MODE: 'cluster',
    ISLET_REDIS_URL: cluster.seeds,
    ...(cluster.password ? { ISLET_REDIS_PASSWORD: cluster.password } : {}),
  };
}
