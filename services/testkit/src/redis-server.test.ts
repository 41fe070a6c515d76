import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedis } from './redis-server.ts';

function ping(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.endsWith('\r\n')) {
        socket.end();
        resolve(data);
      }
    });
    socket.on('error', reject);
    socket.write(command);
  });
}

describe('startRedis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('runs a real redis-server configured with noeviction', async () => {
    expect(await ping(redis.port, 'PING\r\n')).toBe('+PONG\r\n');
    const policy = await ping(redis.port, 'CONFIG GET maxmemory-policy\r\n');
    expect(policy).toContain('noeviction');
  });

  it('keeps data across a SIGKILL through the append-only file', async () => {
    expect(await ping(redis.port, 'SET k v\r\n')).toBe('+OK\r\n');
    await new Promise((r) => setTimeout(r, 1200)); // appendfsync everysec
    await redis.restart();
    expect(await ping(redis.port, 'EXISTS k\r\n')).toBe(':1\r\n');
  });
});
