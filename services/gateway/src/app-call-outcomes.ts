/**
 * The outcomes a binding call to an App fails with, as the program and the record see them: one
 * shape for every failure (`AppCallFailed` with a reason), and an App's own error body, bounded.
 */
import type { BindingOutcome } from '@islet/engine';

export const failed = (
  reason: string,
  message: string,
  extra: Record<string, unknown> = {},
): BindingOutcome => ({
  type: 'error',
  name: 'AppCallFailed',
  message,
  details: { reason, ...extra },
});

/**
 * What the program learns when the App cannot be reached, whatever the cause (refused, reset,
 * timeout, DNS failure, blocked address): one text, so a tenant cannot map the platform's network
 * or tell open ports from closed ones. The real reason goes to the gateway's log.
 */
export const APP_UNREACHABLE_MESSAGE = 'the App could not be reached or did not answer in time';

/** Most of an App's error body that reaches the program and the record. */
const APP_ERROR_BODY_MAX_BYTES = 4096;

/**
 * An App's non-2xx body as the program sees it: `details.body` (JSON when it is JSON and fits,
 * else text cut at `APP_ERROR_BODY_MAX_BYTES`), and a short `: <error>` for the message when
 * the body has an `error` or `message` string.
 */
export function errorBody(text: string): { summary: string; details: Record<string, unknown> } {
  if (text.length === 0) return { summary: '', details: {} };
  const bytes = Buffer.byteLength(text);
  if (bytes > APP_ERROR_BODY_MAX_BYTES) {
    // Cut on a character boundary: a split UTF-8 sequence would end in a replacement character.
    let cut = Buffer.from(text).subarray(0, APP_ERROR_BODY_MAX_BYTES).toString('utf8');
    if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
    return { summary: '', details: { body: cut, bodyTruncated: true } };
  }
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  const said =
    body && typeof body === 'object' && !Array.isArray(body)
      ? ((body as Record<string, unknown>).error ?? (body as Record<string, unknown>).message)
      : typeof body === 'string'
        ? body
        : undefined;
  const summary = typeof said === 'string' && said.trim() ? `: ${said.trim().slice(0, 200)}` : '';
  return { summary, details: { body } };
}
