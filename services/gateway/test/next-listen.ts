/**
 * The next `hub.listen` a waited submit makes, passed through to the hub: `listened` resolves with
 * the run id it listens for (so a test can end that run while the submit waits); `restore()` puts
 * `listen` back (call it in a `finally`). Used by the waited-answer tests (wait-end-splice,
 * wait-reply-raw).
 */
import { vi } from 'vitest';
import type { TestGatewayDeps } from './gateway-harness.ts';

type Hub = TestGatewayDeps['hub'];
type Listener = Parameters<Hub['listen']>[1];

export function nextListen(hub: Hub): { listened: Promise<string>; restore: () => void } {
  const listen = hub.listen.bind(hub);
  let heard: ((id: string) => void) | undefined;
  const listened = new Promise<string>((resolve) => {
    heard = resolve;
  });
  const spy = vi.spyOn(hub, 'listen').mockImplementationOnce((k: string, fn: Listener) => {
    const off = listen(k, fn);
    heard?.(k);
    return off;
  });
  return { listened, restore: () => spy.mockRestore() };
}

type End = Parameters<TestGatewayDeps['runs']['finish']>[1];

/** A Failed (or Cancelled) end of `kind`, as the runner writes it, one log line before. */
export const failedEnd = (
  kind: string,
  reason: string,
  message: string,
  status: 'Failed' | 'Cancelled' = 'Failed',
): End =>
  ({
    status,
    result: { _tag: 'Failed', reason, kind, message, logs: [{ level: 'log', text: 'before' }] },
    text: `code run failed (${kind}): ${message}`,
    kind,
  }) as unknown as End;
