export { freePort } from './free-port.ts';
export { spawnOwned, stopOwned } from './owned-process.ts';
export { type SentinelGroup, startSentinelGroup } from './redis-sentinel-group.ts';
export { type RedisServer, startRedis } from './redis-server.ts';
