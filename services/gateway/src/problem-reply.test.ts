/** A Redis failover answers 503 + Retry-After (retry with the Idempotency-Key), never a 500; a bug stays a 500. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { installProblemHandlers, isRedisTransient } from './problem-reply.ts';

describe('errors while Redis fails over', () => {
  it('are 503 unavailable with Retry-After; other errors stay 500 internal', async () => {
    const app = Fastify({ logger: false });
    installProblemHandlers(app);
    const failures: Record<string, () => Error> = {
      clusterdown: () => new Error('CLUSTERDOWN The cluster is down'),
      tryagain: () => new Error('TRYAGAIN Multiple keys request during rehashing of slot'),
      closed: () => new Error('Connection is closed.'),
      retries: () =>
        Object.assign(new Error('Reached the max retries per request limit'), {
          name: 'MaxRetriesPerRequestError',
        }),
      slots: () =>
        Object.assign(new Error('Failed to refresh slots cache.'), { name: 'ClusterAllFailedError' }),
      bug: () => new TypeError("Cannot read properties of undefined (reading 'x')"),
    };
    for (const [name, make] of Object.entries(failures))
      app.get(`/${name}`, async () => {
        throw make();
      });
    try {
      for (const name of ['clusterdown', 'tryagain', 'closed', 'retries', 'slots']) {
        const res = await app.inject({ url: `/${name}` });
        expect(res.statusCode, name).toBe(503);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.headers['content-type']).toContain('application/problem+json');
        expect(res.json()).toMatchObject({ status: 503 });
      }
      const bug = await app.inject({ url: '/bug' });
      expect(bug.statusCode).toBe(500);
      expect(bug.json().detail).toBe('an internal error occurred; it was logged');
      expect(isRedisTransient(new Error('CLUSTERDOWNX'))).toBe(false);
    } finally {
      await app.close();
    }
  });
});
