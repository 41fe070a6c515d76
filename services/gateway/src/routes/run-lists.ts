/**
 * `GET /v1/runs` and `GET /v1/sessions`: the caller's tenant's runs and sessions, newest first,
 * from the tenant's run index (`@islet/runs` run-index.ts). Items are summaries (no code, no logs;
 * the record is `GET /v1/code-runs/{id}`). A principal sees its own runs and sessions; a key with
 * `sessions.admin` sees the tenant's; `platform.admin` may name another tenant (`tenant`).
 */
import { principalOf } from '@islet/core';
import { RUN_STATUSES, type RunStatus } from '@islet/protocol';
import { decodeCursor, type RunListStyle } from '@islet/runs';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { type Caller, callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { badParameter, onlyKnownParameters } from './params.ts';

const MAX_LIMIT = 200;
const STYLES: readonly RunListStyle[] = ['run_code', 'code-mode', 'skill'];

type Query = Record<string, string | string[] | undefined>;

function single(query: Query, name: string): string | undefined {
  const v = query[name];
  if (Array.isArray(v)) throw badParameter(name, 'give it once');
  return v;
}

/** ms since epoch, from ms digits or an ISO 8601 date-time. */
function time(query: Query, name: string): number | undefined {
  const v = single(query, name);
  if (v === undefined) return undefined;
  if (/^\d{1,16}$/.test(v)) return Number(v);
  const iso = z.iso.datetime({ offset: true }).safeParse(v);
  if (!iso.success) throw badParameter(name, 'expected ms since epoch or an ISO 8601 date-time');
  return Date.parse(v);
}

function common(query: Query, known: readonly string[]) {
  onlyKnownParameters(query, known);
  const limitText = single(query, 'limit');
  const limit = limitText === undefined ? 50 : Number(limitText);
  if (!/^\d{1,4}$/.test(limitText ?? '50') || limit < 1 || limit > MAX_LIMIT)
    throw badParameter('limit', `expected a whole number from 1 to ${MAX_LIMIT}`);
  const cursor = single(query, 'cursor');
  if (cursor !== undefined && !decodeCursor(cursor))
    throw badParameter('cursor', 'not a cursor from this list (pass nextCursor as it came)');
  const since = time(query, 'since');
  const until = time(query, 'until');
  const principal = single(query, 'principal');
  if (principal !== undefined && (principal.length === 0 || principal.length > 128))
    throw badParameter('principal', 'expected 1 to 128 characters');
  return { limit, cursor, since, until, principal };
}

/** The tenant listed and the principal the caller is held to (undefined: any). */
function scope(caller: Caller, query: Query, asked: string | undefined) {
  const tenant = single(query, 'tenant');
  const admin = caller.scopes.includes('platform.admin');
  if (tenant !== undefined && !admin)
    throw new HttpProblem('forbidden', 'query parameter tenant needs a key with platform.admin', {
      parameter: 'tenant',
      missingScopes: ['platform.admin'],
    });
  const seesAll = admin || caller.scopes.includes('sessions.admin');
  const own = principalOf(caller);
  // A principal's own wall: asking for another principal finds nothing (not an error, not a leak).
  const principal = seesAll ? asked : own;
  const nothing = !seesAll && asked !== undefined && asked !== own;
  return { tenant: tenant ?? caller.tenantId, principal, nothing };
}

export function runListRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const readScopes = { preHandler: auth.requireScopes('apps.use', 'sessions.read') };
  return async (app) => {
    app.get('/v1/runs', readScopes, async (request: FastifyRequest) => {
      const caller = callerOf(request);
      const query = request.query as Query;
      const base = common(query, [
        'limit',
        'cursor',
        'status',
        'sessionId',
        'principal',
        'since',
        'until',
        'q',
        'style',
        'tenant',
      ]);
      const raw = query.status;
      const statuses = (raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]).flatMap((s) =>
        s.split(','),
      );
      for (const s of statuses)
        if (!(RUN_STATUSES as readonly string[]).includes(s))
          throw badParameter(
            'status',
            `unknown status ${JSON.stringify(s)} (known: ${RUN_STATUSES.join(', ')})`,
          );
      const style = single(query, 'style');
      if (style !== undefined && !(STYLES as readonly string[]).includes(style))
        throw badParameter('style', `expected one of ${STYLES.join(', ')}`);
      const sessionId = single(query, 'sessionId');
      if (sessionId !== undefined && (sessionId.length === 0 || sessionId.length > 200))
        throw badParameter('sessionId', 'expected 1 to 200 characters');
      const q = single(query, 'q');
      if (q !== undefined && q.length > 200) throw badParameter('q', 'expected at most 200 characters');
      const { tenant, principal, nothing } = scope(caller, query, base.principal);
      if (nothing) return { items: [], nextCursor: null };
      return deps.runIndex.listRuns(tenant, {
        limit: base.limit,
        ...(base.cursor !== undefined ? { cursor: base.cursor } : {}),
        ...(statuses.length ? { statuses: statuses as RunStatus[] } : {}),
        ...(sessionId !== undefined ? { sessionId } : {}),
        ...(principal !== undefined ? { principal } : {}),
        ...(base.since !== undefined ? { since: base.since } : {}),
        ...(base.until !== undefined ? { until: base.until } : {}),
        ...(q ? { q } : {}),
        ...(style !== undefined ? { style: style as RunListStyle } : {}),
      });
    });

    app.get('/v1/sessions', readScopes, async (request: FastifyRequest) => {
      const caller = callerOf(request);
      const query = request.query as Query;
      const base = common(query, ['limit', 'cursor', 'principal', 'since', 'until', 'tenant']);
      const { tenant, principal, nothing } = scope(caller, query, base.principal);
      if (nothing) return { items: [], nextCursor: null };
      return deps.runIndex.listSessions(tenant, {
        limit: base.limit,
        ...(base.cursor !== undefined ? { cursor: base.cursor } : {}),
        ...(principal !== undefined ? { principal } : {}),
        ...(base.since !== undefined ? { since: base.since } : {}),
        ...(base.until !== undefined ? { until: base.until } : {}),
      });
    });
  };
}
