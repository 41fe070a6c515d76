/**
 * A lone binding call's POST body on the runner's side (gateway-client.ts `alone`), made from the
 * call's fields with no object to stringify: on the call's path (test/bench/README.md, round 51
 * `binding-passthrough`); the same bytes go over the wire as before. The gateway's answer is read
 * with one `JSON.parse` of its text: reading a served result in place (only the value's literal
 * parsed) counted more instructions than that parse (same README section), so it was not kept.
 */
import type { BindingCall } from '@islet/engine';

/**
 * The call's request body: the same bytes as `JSON.stringify({ attempt, ...call, takeover })` of a
 * call as the engine hands it (`index`, `binding`, `argsJson`, in that order; binding-outcome.ts
 * `callHandler`), only its two strings escaped (each by `JSON.stringify` of the string).
 */
export function callBody(attempt: number, call: BindingCall, takeover: boolean): string {
  return `{"attempt":${attempt},"index":${call.index},"binding":${JSON.stringify(call.binding)},"argsJson":${JSON.stringify(call.argsJson)}${takeover ? ',"takeover":true}' : '}'}`;
}
