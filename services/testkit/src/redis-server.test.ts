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

  it("preallocates a stream's node at 1 KB, not 4 KB (a run's events stream is a few entries)", async () => {
    expect(await ping(redis.port, 'CONFIG GET stream-node-max-bytes\r\n')).toContain('1024');
    const oneEntryStream = async (key: string) => {
      await ping(redis.port, `XADD ${key} * a 1\r\n`);
      return Number(/:(\d+)/.exec(await ping(redis.port, `MEMORY USAGE ${key}\r\n`))?.[1]);
    };
    const configured = await oneEntryStream('probe-stream');
    // The same stream at Redis's default node size, on the same server, then the setting back.
    await ping(redis.port, 'CONFIG SET stream-node-max-bytes 4096\r\n');
    const atDefault = await oneEntryStream('probe-stream-default');
    await ping(redis.port, 'CONFIG SET stream-node-max-bytes 1024\r\n');
    // The preallocated node is what differs: 4096 - 1024 bytes, less the allocator's rounding.
    expect(atDefault - configured).toBeGreaterThanOrEqual(2048);
  });

  it('keeps no per-command latency histograms', async () => {
    expect(await ping(redis.port, 'CONFIG GET latency-tracking\r\n')).toContain('no');
    await ping(redis.port, 'SET probe 1\r\n');
    const stats = await ping(redis.port, 'INFO latencystats\r\n');
    expect(stats).not.toContain('latency_percentiles_usec_set');
  });

  it('keeps data across a SIGKILL through the append-only file', async () => {
    expect(await ping(redis.port, 'SET k v\r\n')).toBe('+OK\r\n');
    await new Promise((r) => setTimeout(r, 1200)); // appendfsync everysec
    await redis.restart();
    expect(await ping(redis.port, 'EXISTS k\r\n')).toBe(':1\r\n');
  });
});

describe('startRedis with maxmemory', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis({ appendOnly: false, maxMemoryBytes: 4 * 1024 * 1024 });
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('refuses writes past maxmemory (noeviction) and keeps what it holds', async () => {
    expect(await ping(redis.port, 'CONFIG GET maxmemory\r\n')).toContain(String(4 * 1024 * 1024));
    const value = 'x'.repeat(256 * 1024);
    const set = (k: string) =>
      ping(redis.port, `*3\r\n$3\r\nSET\r\n$${k.length}\r\n${k}\r\n$${value.length}\r\n${value}\r\n`);
    let refused = '';
    let i = 0;
    for (; i < 100 && !refused; i++) {
      const reply = await set(`k${i}`);
      if (reply.startsWith('-')) refused = reply;
    }
    expect(refused).toMatch(/^-OOM/);
    // Refused once the values written reach maxmemory (4 MiB of 256 KiB values: the 17th or so),
    // not after writes past it: fewer values were accepted than would fill twice the bound.
    expect((i - 1) * value.length).toBeLessThan(2 * 4 * 1024 * 1024);
    expect(await ping(redis.port, 'EXISTS k0\r\n')).toBe(':1\r\n');
  });
});
