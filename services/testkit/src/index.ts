export { aofCommands, newestIncrAof } from './aof.ts';
export { clearOfBoundary } from './clear-of-boundary.ts';
export { freePort } from './free-port.ts';
export { spawnOwned, stopOwned } from './owned-process.ts';
export {
  type RedisCluster,
  type RedisClusterNode,
  type RedisClusterOptions,
  type SlotCheckingRedis,
  startRedisCluster,
  startSlotCheckingRedis,
} from './redis-cluster.ts';
export { type SentinelGroup, startSentinelGroup } from './redis-sentinel-group.ts';
export { type RedisServer, startRedis } from './redis-server.ts';
export { type RunFixture, runFixture } from './run-fixture.ts';
export { countStreamPushes, type StreamPushes } from './stream-pushes.ts';
export { killAllOf, processesOf } from './uid-processes.ts';
