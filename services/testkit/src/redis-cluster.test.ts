import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RedisCluster,
  type SlotCheckingRedis,
  startRedisCluster,
  startSlotCheckingRedis,
} from './redis-cluster.ts';

const run = promisify(execFile);
const cli = async (port: number, ...args: string[]) =>
  (
    await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), '-a', 'pw', '--no-auth-warning', ...args])
  ).stdout.trim();

describe('startRedisCluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ password: 'pw' });
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('forms three masters with a replica each, every slot served', async () => {
    expect(cluster.nodes).toHaveLength(6);
    expect(cluster.seeds.split(',')).toHaveLength(6);
    expect(await cluster.masters()).toHaveLength(3);
    const info = await cli(cluster.nodes[0]!.port, 'cluster', 'info');
    expect(info).toContain('cluster_state:ok');
    expect(info).toContain('cluster_slots_ok:16384');
    expect(await cli(cluster.nodes[0]!.port, 'ping')).toBe('PONG');
  });

  it('promotes a replica when a master is killed, keeping replicated writes', async () => {
    const owner = await cluster.masterOf('survivor');
    expect(await cli(owner, 'set', 'survivor', 'yes')).toBe('OK');
    expect(Number(await cli(owner, 'wait', '1', '5000'))).toBe(1);
    const killed = await cluster.killMaster(owner);
    expect(killed).toBe(owner);
    expect(cluster.nodes.find((n) => n.port === owner)?.alive).toBe(false);
    const masters = await cluster.masters();
    expect(masters).toHaveLength(3);
    expect(masters).not.toContain(owner);
    const now = await cluster.masterOf('survivor');
    expect(now).not.toBe(owner);
    expect(await cli(now, 'get', 'survivor')).toBe('yes');
  }, 60_000);
});

describe('startSlotCheckingRedis', () => {
  let redis: SlotCheckingRedis;
  const plain = async (...args: string[]) =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(redis.port), ...args])).stdout.trim();
  beforeAll(async () => {
    redis = await startSlotCheckingRedis();
  }, 30_000);
  afterAll(async () => {
    await redis?.stop();
  });

  it('serves single-slot work to a plain client and refuses anything spanning two slots', async () => {
    expect(await plain('set', 'a', '1')).toBe('OK');
    expect(await plain('mset', '{t}a', '1', '{t}b', '2')).toBe('OK');
    expect(await plain('mset', 'a', '1', 'b', '2')).toMatch(/CROSSSLOT/);
    const script = "redis.call('set', KEYS[1], 1); redis.call('set', KEYS[2], 1); return 1";
    expect(await plain('eval', script, '2', '{x}1', '{x}2')).toBe('1');
    expect(await plain('eval', script, '2', 'x1', 'x2')).toMatch(/CROSSSLOT|same slot/);
  });
});
