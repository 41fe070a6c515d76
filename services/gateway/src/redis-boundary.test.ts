/**
 * Redis only inside stores: no gateway source file but a store (`*-store.ts`) sends a Redis
 * command or holds a Redis connection. The exceptions are named with their reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('.', import.meta.url));

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
