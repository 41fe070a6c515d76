/**
 * The queue board for platform admins: bull-board (its fastify adapter, BullMQ adapter, its own
 * static assets from the package) at `/queues`, one queue per sandbox mode. The board's page and
 * its API calls cannot carry the API key, so `POST /console/board-session` (a key with
 * `platform.admin`) sets a short-lived cookie scoped to `/queues`: the key's hash, an expiry and
 * an HMAC under ISLET_INTERNAL_TOKEN (shared by every replica). Each board request checks the
 * HMAC, the expiry, and that the key still exists with `platform.admin` — a revoked key stops
 * working at once. A Bearer key with `platform.admin` works too (curl).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { hashApiKey } from '@islet/core';
import { problem } from '@islet/protocol';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';

const BOARD_PATH = '/queues';
const COOKIE = 'islet_board';
const LIFETIME_MS = 15 * 60_000;
/**
 * bull-board's page: its own scripts and styles from `/queues/static` (its loading screen has
 * inline styles; no inline script runs: `__UI_CONFIG__` is JSON data), its API on the same origin.
 */
const BOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

function cookieOf(request: FastifyRequest): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return value.join('=');
  }
  return undefined;
}

export function boardRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const mac = (payload: string) =>
    createHmac('sha256', `islet-board:${deps.config.ISLET_INTERNAL_TOKEN}`)
      .update(payload)
      .digest('base64url');

  async function adminKeyHash(hash: string): Promise<boolean> {
    // Expired, revoked or rotated-away keys resolve to nothing (a revoke drops every replica's cache).
    const identity = await deps.tenants.resolveKeyHash(hash);
    if (!identity) return false;
    return (
      identity.scopes.includes('platform.admin') && Boolean(await deps.tenants.getTenant(identity.tenantId))
    );
  }

  // Answers the refusal itself: bull-board's own error handler would turn a thrown problem into a 500.
  async function boardAuth(request: FastifyRequest, reply: FastifyReply) {
    const h = request.headers.authorization;
    const bearer = typeof h === 'string' ? /^Bearer\s+(.+)$/i.exec(h.trim())?.[1] : undefined;
    if (bearer && (await adminKeyHash(hashApiKey(bearer)))) return;
    const [hash = '', exp = '', sig = ''] = (cookieOf(request) ?? '').split('.');
    const want = Buffer.from(mac(`${hash}.${exp}`));
    const got = Buffer.from(sig);
    const valid = got.length === want.length && timingSafeEqual(got, want) && Number(exp) > Date.now();
    if (!valid || !(await adminKeyHash(hash)))
      return sendProblem(
        reply,
        problem('unauthorized', 'the queue board needs a key with platform.admin (sign in to /console)'),
      );
  }

  const adapter = new FastifyAdapter();
  adapter.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: deps.runQueue.forBoard().map((q) => new BullMQAdapter(q)),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'Islet queues' } },
  });

  return async (app) => {
    app.post(
      '/console/board-session',
      { preHandler: auth.requireScopes('platform.admin') },
      async (request, reply) => {
        const key = /^Bearer\s+(.+)$/i.exec(String(request.headers.authorization).trim())?.[1] ?? '';
        const payload = `${hashApiKey(key)}.${Date.now() + LIFETIME_MS}`;
        // Secure unless this is a plain-http development stack (a TLS ingress talks http to us, so
        // the request's own protocol says nothing about what the browser used).
        const secure = deps.config.ISLET_DEV_PLAIN_HTTP === 'true' ? '' : '; Secure';
        reply.header(
          'set-cookie',
          `${COOKIE}=${payload}.${mac(payload)}; Path=${BOARD_PATH}; HttpOnly; SameSite=Strict; Max-Age=${LIFETIME_MS / 1000}${secure}`,
        );
        return reply.code(204).send();
      },
    );
    await app.register(async (board) => {
      // The board is an admin's live view: never framed (clickjacking), nothing loaded from elsewhere.
      board.addHook('onSend', async (_request, reply, payload) => {
        reply.header('content-security-policy', BOARD_CSP);
        reply.header('x-frame-options', 'DENY');
        reply.header('x-content-type-options', 'nosniff');
        reply.header('referrer-policy', 'no-referrer');
        return payload;
      });
      board.addHook('onRequest', boardAuth);
      await board.register(adapter.registerPlugin(), { prefix: BOARD_PATH });
    });
  };
}
