/**
 * A Redis Cluster client (`ISLET_REDIS_MODE=cluster`) switched by `readRepliesFast`: each per-node
 * connection reads directly and parses text replies as text (redis-cluster-nodes.ts), and the client
 * gets the same replies as a plain Cluster client — UTF-8 text, invalid UTF-8, replies over many
 * reads, errors, MULTI inside a slot, pipelines, `…Buffer` commands, through an ASK and a MOVED
 * redirection, after a node's socket is closed and after a master fails over. Real six-node cluster.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { type RedisCluster, startRedisCluster } from '@islet/testkit';
import { type Cluster, Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LuaScript, OneCopyCommand } from './lua-script.ts';
import { createRedis, type Redis } from './redis.ts';
import { switchClusterNodes } from './redis-cluster-nodes.ts';
import { readRepliesDirect } from './redis-direct-read.ts';
import { readRepliesAsText, readRepliesFast } from './redis-text-replies.ts';

const requireIoredis = createRequire(createRequire(import.meta.url).resolve('ioredis'));
const Command = (requireIoredis('./Command') as { default: new (name: string, args: string[]) => unknown })
  .default;

/** Every byte value 0–255 and random bytes: invalid UTF-8. */
const binary = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(70_000)]);
/** Three- and four-byte characters over ~1.5 MiB: many a read ends inside one. */
const wide = `${'ключ-☃-𝄞-'.repeat(100_000)}end`;

const asCluster = (r: Redis) => r as unknown as Cluster;
/** The first `'data'` listener of a socket is still ioredis's DataHandler's (not switched to text). */
const dataHandlerListens = (socket: { listeners(e: 'data'): unknown[] } | undefined) =>
  /^\(data\)\s*=>\s*\{\s*parser\.execute\(data\);?\s*\}$/.test(String(socket?.listeners('data')[0]));
/** The socket reads through `onread` (redis-direct-read.ts): Node's `kBuffer` holds its buffer. */
const readsDirect = (socket: object | undefined) => {
  const symbol = socket && Object.getOwnPropertySymbols(socket).find((k) => k.description === 'kBuffer');
  return symbol !== undefined && Buffer.isBuffer((socket as Record<symbol, unknown>)[symbol]);
};
/** The Cluster client's pub/sub connection (ioredis's `ClusterSubscriber`'s). */
const subscriberOf = (r: Redis) =>
  (asCluster(r) as unknown as { subscriber: { getInstance(): Redis | undefined } }).subscriber.getInstance();

/** The same commands on any client; keys of one MULTI or pipeline share the `{x}` slot. */
async function work(r: Redis): Promise<unknown[]> {
  const out: unknown[] = [];
  out.push(await r.set('{x}t', 'ключ-☃-𝄞'), await r.get('{x}t'), await r.get('missing'));
  out.push(await r.set('bin', binary), await r.get('bin'), await r.getBuffer('bin'));
  out.push(
    await r.set('wide', wide),
    (await r.get('wide')) === wide,
    (await r.getBuffer('wide'))?.toString() === wide,
  );
  out.push(await r.rpush('{x}l', 'a', 'ж', binary, ''), await r.lrange('{x}l', 0, -1));
  out.push(await r.lrangeBuffer('{x}l', 0, -1));
  out.push(
    await r.hset('{x}h', 'f', 'в', 'g', binary),
    await r.hgetall('{x}h'),
    await r.hgetallBuffer('{x}h'),
  );
  out.push(await r.incr('{x}n'), await r.ping(), await r.type('{x}h'));
  out.push(await r.get('{x}h').catch((e: Error) => [e.name, e.message]));
  out.push(
    await r.eval("return {KEYS[1], ARGV[1], 42, {'x', 'й'}, redis.error_reply('BAD it')}", 1, 'к', 'б'),
  );
  out.push(await r.callBuffer('eval', 'return {KEYS[1], ARGV[1], 42}', '1', 'к', 'б'));
  out.push(await r.eval("return redis.error_reply('NOPE ☃')", 0).catch((e: Error) => [e.name, e.message]));
  out.push(await r.multi().get('{x}t').getBuffer('{x}t').get('{x}h').incr('{x}n').exec());
  out.push(await r.pipeline().get('{x}t').getBuffer('{x}l').lrange('{x}l', 0, 1).exec());
  out.push(
    await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? r.get('{x}t') : r.getBuffer('{x}t')))),
  );
  const greet = r as Redis & { greet(k: string): Promise<unknown>; greetBuffer(k: string): Promise<unknown> };
  out.push(await greet.greet('{x}t'), await greet.greetBuffer('{x}t'));
  // A command built without an encoding resolves with what the parser made: Buffers, as before.
  out.push(await r.sendCommand(new Command('get', ['{x}t']) as Parameters<Redis['sendCommand']>[0]));
  return out;
}

function withScript(r: Redis): Redis {
  r.defineCommand('greet', { numberOfKeys: 1, lua: "return {redis.call('GET', KEYS[1]), 'ü'}" });
  return r;
}

describe('a Redis Cluster client read directly and as text, node by node', () => {
  let cluster: RedisCluster;
  let cfg: { ISLET_REDIS_MODE: 'cluster'; ISLET_REDIS_URL: string };
  const opened: Redis[] = [];
  const client = (): Redis => {
    const r = withScript(createRedis(cfg));
    r.on('error', () => {});
    opened.push(r);
    return r;
  };
  const flushAll = async (r: Redis) => {
    for (const node of asCluster(r).nodes('master')) await node.flushall();
  };
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
    cfg = { ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: cluster.seeds };
  }, 60_000);
  afterAll(async () => {
    for (const r of opened) r.disconnect();
    await cluster?.stop();
  });

  it('gives every reply as a plain Cluster client does, every master connection switched', async () => {
    const plain = client();
    const fast = client();
    const direct = readRepliesDirect(fast);
    const text = readRepliesAsText(fast);
    const theirs = await work(plain);
    await flushAll(plain);
    const ours = await work(fast);
    expect(ours).toEqual(theirs);
    expect(typeof ours[4]).toBe('string');
    expect(Buffer.isBuffer(ours[5])).toBe(true);
    expect((ours[5] as Buffer).equals(binary)).toBe(true);
    expect(ours.slice(7, 9)).toEqual([true, true]);
    // Each master served a command (the keys' slots span them): each one's socket switched both ways.
    const masters = asCluster(fast).nodes('master');
    expect(masters).toHaveLength(3);
    expect(masters.every((node) => node.status === 'ready')).toBe(true);
    expect(text.switched()).toBeGreaterThanOrEqual(3);
    expect(direct.switched()).toBeGreaterThanOrEqual(3);
    for (const node of masters) expect(dataHandlerListens(node.stream)).toBe(false);
    await flushAll(plain);
  });

  it('makes no Buffer slice and no conversion for a text reply; …Buffer replies still slices', async () => {
    const plain = client();
    const fast = client();
    readRepliesFast(fast);
    const values = Array.from({ length: 100 }, (_, i) => `v${i}-ё`);
    await plain.rpush('{x}many', ...values);
    await fast.ping();
    await fast.get('{x}many-warm');
    const utils = requireIoredis('./utils') as { convertBufferToString: (...args: unknown[]) => unknown };
    const count = async (fn: () => Promise<unknown>) => {
      const slices = vi.spyOn(Buffer.prototype, 'slice');
      const converts = vi.spyOn(utils, 'convertBufferToString');
      try {
        const value = await fn();
        // Only this list's own values: every Cluster client here (the plain ones too) refreshes
        // its slot map every 5 s, and that reply may be parsed inside the window.
        const ofList = (v: unknown) => Buffer.isBuffer(v) && /^v\d+-ё$/.test(v.toString());
        return {
          value,
          slices: slices.mock.results.filter((r) => ofList(r.value)).length,
          // Called once a reply (its recursion is not through the module object).
          converts: converts.mock.calls.filter((call) => Array.isArray(call[0]) && call[0].some(ofList))
            .length,
        };
      } finally {
        slices.mockRestore();
        converts.mockRestore();
      }
    };
    const theirs = await count(() => plain.lrange('{x}many', 0, -1));
    const ours = await count(() => fast.lrange('{x}many', 0, -1));
    const oursBuffer = await count(() => fast.lrangeBuffer('{x}many', 0, -1));
    expect(theirs.value).toEqual(values);
    expect(ours.value).toEqual(values);
    expect(theirs.slices).toBeGreaterThanOrEqual(100);
    expect(theirs.converts).toBe(1);
    expect(ours.slices).toBe(0);
    expect(ours.converts).toBe(0);
    expect(oursBuffer.slices).toBeGreaterThanOrEqual(100);
    expect((oursBuffer.value as Buffer[]).map(String)).toEqual(values);
    await plain.del('{x}many');
  });

  it('follows an ASK and a MOVED redirection with the same replies', async () => {
    const plain = client();
    const fast = client();
    readRepliesFast(fast);
    await fast.set('{m}old', 'ё-old');
    const slot = Number(await plain.cluster('KEYSLOT', '{m}'));
    const sourcePort = await cluster.masterOf('{m}');
    const targetPort = (await cluster.masters()).find((p) => p !== sourcePort)!;
    const source = new IORedis({ port: sourcePort });
    const target = new IORedis({ port: targetPort });
    const askings = async () =>
      Number(/cmdstat_asking:calls=(\d+)/.exec(await target.info('commandstats'))?.[1] ?? 0);
    try {
      const sourceId = String(await source.cluster('MYID'));
      const targetId = String(await target.cluster('MYID'));
      const asked = await askings();
      await target.cluster('SETSLOT', slot, 'IMPORTING', sourceId);
      await source.cluster('SETSLOT', slot, 'MIGRATING', targetId);
      // Not on the source while the slot migrates: ASK, then ASKING + the command on the target.
      expect(await fast.set('{m}new', binary)).toBe('OK');
      expect(await fast.get('{m}new')).toBe(binary.toString());
      expect(await fast.getBuffer('{m}new')).toEqual(binary);
      expect(await fast.get('{m}old')).toBe('ё-old');
      expect(await askings()).toBeGreaterThanOrEqual(asked + 3);
      expect(await plain.get('{m}new')).toBe(await fast.get('{m}new'));
      // The slot moves: its key with it, then every master is told; the clients' maps are stale.
      await source.migrate('127.0.0.1', targetPort, '', 0, 5000, 'KEYS', '{m}old');
      for (const port of await cluster.masters()) {
        const node = new IORedis({ port });
        try {
          await node.cluster('SETSLOT', slot, 'NODE', targetId);
        } finally {
          node.disconnect();
        }
      }
      const owner = () => asCluster(fast).slots[slot]?.[0];
      // Stale unless the client's own slot refresh (every 5 s) came in between: then no MOVED.
      const stale = owner() === `127.0.0.1:${sourcePort}`;
      const moved = vi.spyOn(asCluster(fast), 'refreshSlotsCache');
      expect(await fast.get('{m}old')).toBe('ё-old');
      if (stale) expect(moved).toHaveBeenCalled();
      expect(await target.get('{m}old')).toBe('ё-old');
      expect(await fast.mget('{m}old', '{m}new')).toEqual(await plain.mget('{m}old', '{m}new'));
      expect(await fast.multi().get('{m}old').getBuffer('{m}old').exec()).toEqual([
        [null, 'ё-old'],
        [null, Buffer.from('ё-old')],
      ]);
    } finally {
      vi.restoreAllMocks();
      source.disconnect();
      target.disconnect();
    }
  });

  it("switches a node's new client after its socket was closed and after a failover; its subscriber read directly, not as text", async () => {
    const fast = client();
    const publisher = client();
    const read = readRepliesAsText(fast);
    readRepliesDirect(fast);
    await fast.set('{r}k', 'д-1');
    const port = await cluster.masterOf('{r}');
    const before = asCluster(fast)
      .nodes('all')
      .find((n) => n.options.port === port)!;
    const switchedBefore = read.switched();
    // The node drops every client (a restart, from the client's side): the pool's client ends.
    const admin = new IORedis({ port });
    try {
      const ended = new Promise((resolve) => before.once('end', resolve));
      await admin.client('KILL', 'TYPE', 'normal');
      await ended;
    } finally {
      admin.disconnect();
    }
    await expect.poll(() => fast.get('{r}k'), { timeout: 10_000 }).toBe('д-1');
    const after = asCluster(fast)
      .nodes('all')
      .find((n) => n.options.port === port)!;
    expect(after).not.toBe(before);
    expect(dataHandlerListens(after.stream)).toBe(false);
    expect(read.switched()).toBeGreaterThan(switchedBefore);

    // Pub/sub: the subscriber connection is outside the pool: read directly (round 51), parsed as before.
    const messages: { bytes?: Buffer; text?: string } = {};
    fast.on('messageBuffer', (_channel: Buffer, message: Buffer) => {
      messages.bytes = message;
    });
    fast.on('message', (_channel: string, message: string) => {
      messages.text = message;
    });
    expect(await fast.subscribe('канал')).toBe(1);
    await publisher.publish('канал', binary);
    await expect.poll(() => Object.keys(messages).length).toBe(2);
    expect(messages).toEqual({ bytes: binary, text: binary.toString() });
    const subscriberSocket = subscriberOf(fast)?.stream;
    expect(dataHandlerListens(subscriberSocket)).toBe(true);
    expect(readsDirect(subscriberSocket)).toBe(true);
    await fast.unsubscribe('канал');

    // A master fails over: its replica (made switched, still unconnected) takes its slots.
    const killed = await cluster.killMaster(await cluster.masterOf('{r}'));
    await expect
      .poll(() => fast.get('{r}k').catch(() => 'down'), { timeout: 30_000, interval: 200 })
      .toBe('д-1');
    const owner = asCluster(fast).slots[Number(await fast.cluster('KEYSLOT', '{r}'))]?.[0];
    const promoted = asCluster(fast)
      .nodes('all')
      .find((n) => `${n.options.host}:${n.options.port}` === owner);
    expect(promoted).toBeDefined();
    expect(promoted!.options.port).not.toBe(killed);
    expect(promoted!.status).toBe('ready');
    expect(dataHandlerListens(promoted!.stream)).toBe(false);
    expect(await fast.getBuffer('{r}k')).toEqual(Buffer.from('д-1'));
  }, 60_000);

  it('reads a Cluster pub/sub connection directly, and its successor after the connection is dropped', async () => {
    const sub = client();
    const publisher = client();
    const read = readRepliesDirect(sub);
    const got: Buffer[] = [];
    sub.on('messageBuffer', (_channel: Buffer, message: Buffer) => got.push(message));
    expect(await sub.subscribe('{s}ends')).toBe(1);
    const first = subscriberOf(sub);
    expect(readsDirect(first?.stream)).toBe(true);
    const switchedBefore = read.switched();
    await publisher.publish('{s}ends', binary);
    await expect.poll(() => got.length).toBe(1);
    // Its node drops it (a restart, from the client's side): ioredis makes another, maybe on
    // another node, and subscribes it again to the same channel.
    const admin = new IORedis({ port: first!.options.port });
    try {
      await admin.client('KILL', 'TYPE', 'pubsub');
    } finally {
      admin.disconnect();
    }
    await expect
      .poll(() => subscriberOf(sub) !== first && subscriberOf(sub)?.status === 'ready', { timeout: 10_000 })
      .toBe(true);
    expect(readsDirect(subscriberOf(sub)?.stream)).toBe(true);
    expect(read.switched()).toBeGreaterThan(switchedBefore);
    // Re-subscribed: a message published now arrives, whole.
    await expect
      .poll(
        async () => {
          await publisher.publish('{s}ends', 'после');
          return got.some((m) => m.toString() === 'после');
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(true);
    expect(got[0]).toEqual(binary);
  }, 30_000);

  it("sends a script call on a Cluster as OneCopyCommand: ioredis's replies, NOSCRIPT's EVAL, a MOVED followed", async () => {
    const plain = client();
    const fast = client();
    readRepliesFast(fast);
    const lua = `return {KEYS[1], ARGV[1], ARGV[2], redis.call('SET', KEYS[1], ARGV[1]), '${randomBytes(4).toString('hex')}'}`;
    const script = new LuaScript(lua);
    const sent: unknown[] = [];
    const cluster_ = asCluster(fast) as unknown as {
      sendCommand: (c: unknown, ...rest: unknown[]) => unknown;
    };
    const send = cluster_.sendCommand.bind(cluster_);
    vi.spyOn(cluster_, 'sendCommand').mockImplementation((command: unknown, ...rest: unknown[]) => {
      sent.push(command);
      return send(command, ...rest);
    });
    const args = ['ключ-☃', binary.toString('latin1')];
    // First call: NOSCRIPT on the node, then EVAL; second: EVALSHA.
    const first = await script.run(fast, ['{s}a'], args);
    const second = await script.run(fast, ['{s}a'], [args[0]!, 42]);
    const theirs = await plain.eval(lua, 1, '{s}a', ...args);
    expect(first).toEqual(theirs);
    expect(second).toEqual([...(theirs as unknown[]).slice(0, 2), '42', ...(theirs as unknown[]).slice(3)]);
    // Each command once (one queued while the client connected is sent again from its queue).
    const commands = [...new Set(sent)];
    expect(commands.map((c) => (c as { name: string }).name)).toEqual(['evalsha', 'eval', 'evalsha']);
    expect(commands.every((c) => c instanceof OneCopyCommand)).toBe(true);
    expect(await plain.get('{s}a')).toBe(args[0]);
    // The slot moves under the client: a MOVED, and the same command sent to the new owner.
    const slot = Number(await plain.cluster('KEYSLOT', '{s}'));
    const sourcePort = await cluster.masterOf('{s}');
    const targetPort = (await cluster.masters()).find((p) => p !== sourcePort)!;
    const target = new IORedis({ port: targetPort });
    try {
      const targetId = String(await target.cluster('MYID'));
      await plain.del('{s}a');
      for (const port of await cluster.masters()) {
        const node = new IORedis({ port });
        try {
          await node.cluster('SETSLOT', slot, 'NODE', targetId);
        } finally {
          node.disconnect();
        }
      }
      // Stale unless the client's own slot refresh (every 5 s) came in between: then no MOVED.
      const stale = asCluster(fast).slots[slot]?.[0] === `127.0.0.1:${sourcePort}`;
      const moved = vi.spyOn(asCluster(fast), 'refreshSlotsCache');
      expect(await script.runInOrder(fast, ['{s}a'], args)).toEqual(theirs);
      if (stale) expect(moved).toHaveBeenCalled();
      // Written on the new owner (the client's map may lag: a refresh may ask a node not yet told).
      expect(await target.get('{s}a')).toBe(args[0]);
    } finally {
      target.disconnect();
      vi.restoreAllMocks();
    }
  });

  it('leaves a Cluster client it does not recognise as it is', () => {
    const odd = { isCluster: true } as unknown as Redis;
    expect(switchClusterNodes(odd, readRepliesDirect)).toBeUndefined();
    expect(readRepliesAsText(odd).switched()).toBe(0);
    expect(readRepliesDirect(odd).switched()).toBe(0);
  });
});
