/** Path- and query-parameter helpers shared by the route groups, schemas built once (not per request). */
import { z } from 'zod';
import type { Caller } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';

/** `:id` of a run, connection or tenant: ids arrive in URLs, so they are bounded. */
export const idParams = z.object({ id: z.string().min(1).max(200) });

/**
 * `idParams.parse(params).id` for a hot route (the runner's call): the same rule checked by hand,
 * zod asked only for a refusal (its error and text unchanged). Saves zod's walk on every call.
 */
export function idOf(params: unknown): string {
  const id = (params as { id?: unknown } | null)?.id;
  if (typeof id === 'string' && id.length >= 1 && id.length <= 200) return id;
  return idParams.parse(params).id;
}

/** A 400 that names the query parameter at fault (`parameter`), so a client can point at it. */
export function badParameter(parameter: string, detail: string): HttpProblem {
  return new HttpProblem('validation', `query parameter ${parameter}: ${detail}`, {
    parameter,
    errors: [{ path: `query.${parameter}`, message: detail }],
  });
}

/** Refuses a query parameter the route does not know (a typo must not be ignored silently). */
export function onlyKnownParameters(query: Record<string, unknown>, known: readonly string[]): void {
  for (const name of Object.keys(query))
    if (!known.includes(name)) throw badParameter(name, `unknown parameter (known: ${known.join(', ')})`);
}

/**
 * Who a tenant-report route (usage, health) reports on: the caller's own tenant for a key with
 * sessions.admin; any tenant (`tenant=`) or all of them for platform.admin. `what` names the
 * report in the refusal ("usage", "health").
 */
export function reportScope(
  caller: Caller,
  tenant: unknown,
  what: string,
): { admin: boolean; tenant: string | undefined } {
  const admin = caller.scopes.includes('platform.admin');
  if (tenant !== undefined && (!admin || typeof tenant !== 'string'))
    throw new HttpProblem('forbidden', 'query parameter tenant needs a key with platform.admin', {
      parameter: 'tenant',
      missingScopes: ['platform.admin'],
    });
  if (!admin && !caller.scopes.includes('sessions.admin'))
    throw new HttpProblem('forbidden', `a tenant's ${what} needs a key with sessions.admin`, {
      missingScopes: ['sessions.admin'],
    });
  return { admin, tenant: tenant as string | undefined };
}
