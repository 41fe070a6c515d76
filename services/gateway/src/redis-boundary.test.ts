/**
 * Redis only inside stores: no gateway source file but a store (`*-store.ts`) sends a Redis
 * command or holds a Redis connection, BullMQ's included (a queue's or a job's methods are Redis
 * commands: run-queue-store.ts sends them). The exceptions are named with their reason. The same
 * holds for `@islet/mcp`, which the gateway mounts: its state goes through `mcp-store.ts`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('.', import.meta.url));
const MCP_SRC = fileURLToPath(new URL('../../mcp/src/', import.meta.url));

const ALLOWED: Record<string, string> = {
  'create-deps.ts': 'wiring: opens the connections and hands them to the stores',
  'config-backup-main.ts': 'wiring: the backup command opens its connection and hands it to its store',
  'event-hub.ts': 'pub/sub: subscribes to the run-event channel on its own connection, holds no data',
  'read-cache.ts': 'pub/sub: publishes and subscribes to the cache-drop channel, holds no data',
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/** The code without its comments (a comment may speak of Redis). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/**
 * Files outside stores allowed the raw queues, each with its reason (none now: the recovery loop
 * moved to the store's methods too). The BullMQ patterns only: the Redis ones hold for them too.
 */
const QUEUE_ALLOWED: Record<string, string> = {};

/** What gives a file away as sending BullMQ's commands itself. */
const QUEUE_USE = [
  /from 'bullmq'/,
  /\bnew Queue(Events)?\b/,
  /\bqueues\s*\[/,
  /\.queues\b/,
  /\.(getJobs?|getJobCounts|getState|waitUntilFinished|waitUntilReady|obliterate|drain)\(/,
];

/** What gives a file away as talking to Redis itself. */
const REDIS_USE = [
  /from 'ioredis'/,
  /\bRedis\b[^;]*from '@islet\/core'/,
  /\bcreateRedis\b/,
  /\bredis\s*[.?]/,
  /\.redis\b/,
  /\bredis\.call\(/,
];

describe('Redis only inside stores', () => {
  it('finds the files it looks at', () => {
    const names = sources(SRC).map((f) => relative(SRC, f));
    expect(names).toContain('runs-service.ts');
    expect(names).toContain('routes/runs.ts');
    expect(names).toContain('sse-slot-store.ts');
  });

  it('no gateway file outside the stores sends a Redis command or holds a connection', () => {
    const offenders: string[] = [];
    for (const file of sources(SRC)) {
      const name = relative(SRC, file);
      if (name.endsWith('-store.ts') || name in ALLOWED) continue;
      const text = code(readFileSync(file, 'utf8'));
      for (const pattern of REDIS_USE) if (pattern.test(text)) offenders.push(`${name}: ${pattern}`);
    }
    expect(offenders).toEqual([]);
  });

  it('no gateway file outside the stores sends a BullMQ command or holds a queue', () => {
    const offenders: string[] = [];
    for (const file of sources(SRC)) {
      const name = relative(SRC, file);
      if (name.endsWith('-store.ts') || name in ALLOWED || name in QUEUE_ALLOWED) continue;
      const text = code(readFileSync(file, 'utf8'));
      for (const pattern of QUEUE_USE) if (pattern.test(text)) offenders.push(`${name}: ${pattern}`);
    }
    expect(offenders).toEqual([]);
  });

  it('would catch a service that added a job or read a queue', () => {
    const caught = (text: string) => QUEUE_USE.some((p) => p.test(code(text)));
    expect(caught("import type { Queue } from 'bullmq';")).toBe(true);
    expect(caught("await deps.queues['read-only'].add('run', data);")).toBe(true);
    expect(caught('const { queues } = deps;\nawait queues[mode].getJob(id);')).toBe(true);
    expect(caught('const c = await queue.getJobCounts();')).toBe(true);
    expect(caught('await deps.runQueue.enqueueRun(job);\nseen.add(id);')).toBe(false);
  });

  it('every file still allowed the raw queues uses them (the list shrinks as they move)', () => {
    for (const name of Object.keys(QUEUE_ALLOWED)) {
      const text = code(readFileSync(join(SRC, name), 'utf8'));
      expect(QUEUE_USE.some((p) => p.test(text))).toBe(true);
    }
  });

  it('would catch a route that used a connection', () => {
    const route = "import type { Redis } from 'ioredis';\nawait deps.redis.zrem(key, id);";
    expect(REDIS_USE.some((p) => p.test(code(route)))).toBe(true);
    expect(REDIS_USE.some((p) => p.test(code('// Redis holds it: redis.get(key)\nconst x = 1;')))).toBe(
      false,
    );
  });

  it('GatewayDeps has no Redis connection', () => {
    const deps = code(readFileSync(join(SRC, 'deps.ts'), 'utf8'));
    expect(deps).not.toMatch(/^\s*redis\??:/m);
  });
});

describe('Redis only inside stores: @islet/mcp', () => {
  it('finds the files it looks at', () => {
    const names = sources(MCP_SRC).map((f) => relative(MCP_SRC, f));
    expect(names).toContain('mcp-routes.ts');
    expect(names).toContain('islet-mcp-server.ts');
    expect(names).toContain('mcp-store.ts');
  });

  it('no mcp file outside its store sends a Redis command or holds a connection', () => {
    const offenders: string[] = [];
    for (const file of sources(MCP_SRC)) {
      const name = relative(MCP_SRC, file);
      if (name.endsWith('-store.ts')) continue;
      const text = code(readFileSync(file, 'utf8'));
      for (const pattern of [...REDIS_USE, ...QUEUE_USE])
        if (pattern.test(text)) offenders.push(`${name}: ${pattern}`);
    }
    expect(offenders).toEqual([]);
  });

  it('the plugin is handed a store, not a connection', () => {
    const routes = code(readFileSync(join(MCP_SRC, 'mcp-routes.ts'), 'utf8'));
    expect(routes).toMatch(/^\s*storage: McpStore;/m);
    expect(routes).not.toMatch(/^\s*redis\??:/m);
  });
});
