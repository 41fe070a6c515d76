/**
 * The console, registered as one route group: the built front end at `/console` under
 * a strict Content-Security-Policy, the session event stream it watches, the queue board at
 * `/queues` for platform admins, and the interactive API reference at `/docs`.
 */
import { CONSOLE_CSP, loadConsoleAssets } from '@islet/console';
import type { FastifyPluginAsync } from 'fastify';
import { HttpProblem } from '../problem-reply.ts';
import { boardRoutes } from './board.ts';
import type { RouteContext } from './context.ts';
import { docsRoutes } from './docs.ts';
import { sessionEventsRoutes } from './session-events.ts';

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-cache',
};

export function consoleRoutes(ctx: RouteContext): FastifyPluginAsync {
  const assets = loadConsoleAssets();
  return async (app) => {
    app.get('/console', async (_request, reply) => reply.redirect('/console/', 302));
    app.get('/console/*', async (request, reply) => {
      const name = (request.params as { '*': string })['*'] || 'index.html';
      const asset = assets.get(name);
      if (!asset) {
        if (assets.size === 0)
          throw new HttpProblem('not-found', 'the console was not built (services/console/scripts/build.sh)');
        throw new HttpProblem('not-found', `no console file ${name}`);
      }
      return reply.headers(SECURITY_HEADERS).type(asset.type).send(asset.body);
    });
    await app.register(sessionEventsRoutes(ctx));
    await app.register(boardRoutes(ctx));
    await app.register(docsRoutes(ctx));
  };
}
