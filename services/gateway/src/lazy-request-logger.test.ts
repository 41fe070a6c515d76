/**
 * A request's logger makes its pino child only when the request logs: a request that does not log
 * makes none, one that logs gets the child's line (its request id, the parent's bindings, the
 * redaction) as fastify's default child would write it.
 */
import { Writable } from 'node:stream';
import { createLogger } from '@islet/core';
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { LazyRequestLogger, lazyChildLoggerFactory } from './lazy-request-logger.ts';

const lines: Array<Record<string, unknown>> = [];
const destination = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
    done();
  },
});
const logger = createLogger({ name: 'lazy-test', destination });
const app = Fastify({
  loggerInstance: logger as unknown as FastifyBaseLogger,
  logController: new LogController({ disableRequestLogging: true }),
  childLoggerFactory: lazyChildLoggerFactory,
});
app.get('/quiet', async () => ({ ok: true }));
app.get('/loud', async (request) => {
  request.log.warn({ apiKey: 'secret', n: 1 }, 'first');
  request.log.info('second');
  return { ok: true };
});
afterAll(() => app.close());

describe('lazy request logger', () => {
  it('makes no child for a request that does not log', async () => {
    const before = LazyRequestLogger.made;
    for (let i = 0; i < 5; i++) expect((await app.inject({ url: '/quiet' })).statusCode).toBe(200);
    expect(LazyRequestLogger.made).toBe(before);
    expect(lines).toEqual([]);
  });

  it('makes one child for a request that logs, whose lines carry the request id and are redacted', async () => {
    const before = LazyRequestLogger.made;
    expect((await app.inject({ url: '/loud' })).statusCode).toBe(200);
    expect(LazyRequestLogger.made).toBe(before + 1);
    expect(lines).toHaveLength(2);
    const [first, second] = lines;
    expect(first).toMatchObject({
      msg: 'first',
      n: 1,
      apiKey: '[redacted]',
      component: 'lazy-test',
      level: 40,
    });
    expect(typeof first?.reqId).toBe('string');
    expect(second).toMatchObject({ msg: 'second', reqId: first?.reqId, level: 30 });
  });

  it("answers the level without making the child, and a child of it logs with the request's bindings", () => {
    const before = LazyRequestLogger.made;
    const lazy = lazyChildLoggerFactory(logger as unknown as FastifyBaseLogger, { reqId: 'r-9' }, {});
    expect(lazy.level).toBe('info');
    expect(LazyRequestLogger.made).toBe(before);
    lines.length = 0;
    lazy.child({ part: 'x' }).error('deeper');
    expect(LazyRequestLogger.made).toBe(before + 1);
    expect(lines[0]).toMatchObject({ msg: 'deeper', reqId: 'r-9', part: 'x' });
  });
});
