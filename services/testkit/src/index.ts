export { freePort } from './free-port.ts';
export { type RedisServer, startRedis } from './redis-server.ts';
