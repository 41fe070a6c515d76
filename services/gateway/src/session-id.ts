/**
 * Session ids become parts of Redis keys (`…:session:<id>:owner`) and workspace directory names, so
 * they are held to one safe alphabet at the API edge (the workspace's: letters, digits, `.`, `_`,
 * `-`, starting with a letter or digit, at most 128). A separator such as `:` could otherwise spell
 * one session's id so that its keys are another's.
 */
import { z } from 'zod';
import { HttpProblem } from './problem-reply.ts';

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const SESSION_ID_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit";

export const sessionIdSchema = z
  .string()
  .regex(SESSION_ID, `expected ${SESSION_ID_RULE}`)
  .refine((s) => !s.includes('..'), `expected ${SESSION_ID_RULE} (no '..')`);

/** What `sessionIdSchema` accepts, as a predicate (a submit's check without zod: run-request.ts). */
export function isSessionId(value: unknown): value is string {
  return typeof value === 'string' && SESSION_ID.test(value) && !value.includes('..');
}

/** A 400 naming the field unless `value` is a well-formed session id. */
export function checkSessionId(value: string, field = 'sessionId'): void {
  const parsed = sessionIdSchema.safeParse(value);
  if (parsed.success) return;
  const message = parsed.error.issues[0]?.message ?? `expected ${SESSION_ID_RULE}`;
  throw new HttpProblem('validation', `invalid ${field}: ${message}`, { errors: [{ path: field, message }] });
}
