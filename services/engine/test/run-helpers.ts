/**
 * What the engine's run tests (src/engine*.test.ts, src/limits*.test.ts) share: the binding outcomes
 * their handlers give, and `execute` on a test file's own engine with a 5 s budget unless given limits.
 */
import type { BindingCall, BindingOutcome, Engine, ExecuteOptions } from '../src/types.ts';

/** A handler that answers each call with its index and its arguments. */
export const echo = async (call: BindingCall): Promise<BindingOutcome> => ({
  type: 'result',
  valueJson: JSON.stringify({ index: call.index, args: JSON.parse(call.argsJson) }),
});

export const ok = (valueJson = '"ok"'): BindingOutcome => ({ type: 'result', valueJson });

/** `run(code, options)` on `engine`: a 5 s budget unless `options` give limits. */
export function runOn(engine: Engine) {
  return (code: string, options: ExecuteOptions = {}) =>
    engine.execute(code, { limits: { timeoutMs: 5000 }, ...options });
}
