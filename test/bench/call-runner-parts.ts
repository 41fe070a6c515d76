/**
 * `node test/bench/call-runner-parts.ts` (round 50, `binding-runner`): the runner's own pieces of a
 * lone binding call, without a socket, each run `N` times (default 4000) after `WARM` (default 4000)
 * in one process (`PART`):
 * - `answer`: a new `GatewayAnswer` fed the gateway's answer to a lone call (node:http's head for
 *   `writeHead(200, {content-type, content-length})`: Date, Connection, Keep-Alive) in one read, and
 *   its text;
 * - `request`: `GatewayPost`'s bytes of the call's POST (its head, the client's two headers, the
 *   body) and the body's JSON as `gateway-client.ts` makes it.
 * - `parse`, `request`: eb99e4b0's (and d45370e7's) answer parse and request build, as written there;
 * - `request-now` (round 51, `binding-passthrough`): the same from `call-body.ts` (`callBody`);
 * - `parse-inplace` (round 51, a probe not kept): a served result's answer read in place, only the
 *   value's string literal parsed (`servedOutcome` below), against `parse`'s one `JSON.parse`;
 * - `settle` (round 51): the engine's work from the handler's outcome to the host frame's bytes
 *   (binding-outcome.ts `normalizeOutcome`, run-frames.ts `outcomeFrame`, frame.ts's encode), with
 *   `turnMs` as a lone call's; `ENGINE_DIR=<dir>` imports the engine's files from there (a copy of
 *   the base's `services/engine/src` inside the tree, so `@islet/protocol` resolves).
 * `RUNNER_DIR=<dir>` imports the runner's files from there instead (e.g. the base's, put in a
 * directory beside the tree). Counted, not timed: run it under callgrind with `N=0` and `N=<n>`
 * (`call-runner-parts.sh`), which reads the same at any load. Without valgrind it prints ns a part
 * (a hint).
 */
import type * as AnswerModule from '../../services/runner/src/gateway-answer.ts';

const dir = process.env.RUNNER_DIR ?? '../../services/runner/src';
const { GatewayAnswer } = (await import(`${dir}/gateway-answer.ts`)) as typeof AnswerModule;

const engineDir = process.env.ENGINE_DIR ?? '../../services/engine/src';
type Settle = (raw: unknown) => number;
let settle: Settle | undefined;
let callText: { callBody: (attempt: number, call: unknown, takeover: boolean) => string } | undefined;
if (PART_ENV() === 'settle') {
  const { normalizeOutcome } = await import(`${engineDir}/binding-outcome.ts`);
  const frames = await import(`${engineDir}/run-frames.ts`);
  const frame = await import(`${engineDir}/frame.ts`);
  const probe = { type: 'result', valueJson: '1' };
  if (typeof frames.outcomeFrame(0, probe, undefined) === 'string')
    settle = (raw) => frame.encodeText(frames.outcomeFrame(3, normalizeOutcome(raw), 4998))[0].length;
  // d45370e7's run.ts: the turn as an object, the frame an object stringified by `encodeMessage`.
  else
    settle = (raw) => {
      const turn = { turnMs: Math.max(1, Math.ceil(4997.6)) };
      return frame.encodeMessage(frames.outcomeFrame(3, normalizeOutcome(raw), turn))[0].length;
    };
}
if (PART_ENV() === 'request-now') callText = await import(`${dir}/call-body.ts`);
function PART_ENV(): string {
  return process.env.PART ?? 'answer';
}

const N = Number(process.env.N ?? 4000);
const WARM = Number(process.env.WARM ?? 4000);
const PART = process.env.PART ?? 'answer';

const body = '{"outcome":{"type":"result","valueJson":"{\\"ok\\":true}"},"deliverySeq":7}';
// node:http's bytes (v24) for the gateway's `writeHead(200, {content-type, content-length}).end(text)`.
const answer = Buffer.from(
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
    `Date: Mon, 07 Dec 2026 17:46:04 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=72\r\n\r\n${body}`,
  'latin1',
);

const call = { index: 3, binding: 'conn_8f3a2b.ping', argsJson: '{"n":3}' };
const requestLine =
  'POST /internal/v1/code-runs/9b05c3e2-6f0e-4c56-9d0a-2f8e7c1b4a11/calls HTTP/1.1\r\nhost: 127.0.0.1:43121\r\n';
const headers: Record<string, string> = {
  authorization: `Bearer ${'t'.repeat(43)}`,
  'content-type': 'application/json',
};

let sink = 0;
function once(): void {
  if (PART === 'answer') {
    const a = new GatewayAnswer();
    if (a.push(answer) !== true) throw new Error('the answer was not read whole');
    sink += a.text().length + a.status;
    return;
  }
  if (PART === 'request') {
    // eb99e4b0's gateway-client.ts `alone` and gateway-post.ts `post` / `send`, as written there.
    const tryNo = 0;
    const text = JSON.stringify({ attempt: 1, ...call, ...(tryNo > 0 ? { takeover: true } : {}) });
    let head = requestLine;
    for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
    const out = Buffer.from(`${head}content-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`, 'utf8');
    sink += out.length;
    return;
  }
  if (PART === 'parse') {
    // The answer's body into the outcome the engine gets (gateway-client.ts `alone`).
    const parsed = JSON.parse(body) as { outcome: unknown; deliverySeq?: number };
    const live = parsed.deliverySeq === undefined ? { outcome: parsed.outcome } : parsed;
    sink += live.outcome ? 1 : 0;
    return;
  }
  if (PART === 'parse-inplace') {
    const live = servedOutcome(body);
    sink += live.outcome ? 1 : 0;
    return;
  }
  if (PART === 'request-now') {
    const text = callText!.callBody(1, call, false);
    let head = requestLine;
    for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
    const out = Buffer.from(`${head}content-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`, 'utf8');
    sink += out.length;
    return;
  }
  if (PART === 'settle') {
    // What the replaying handler hands the engine for the answer above (a fresh object a call).
    sink += settle!({ type: 'result', valueJson: '{"ok":true}' });
    return;
  }
  throw new Error(`unknown PART ${PART}`);
}

/** The gateway's served result (binding-calls.ts `servedJson` with `{`), up to its value's opening quote. */
const RESULT_HEAD = '{"outcome":{"type":"result","valueJson":"';
const SEQ_MARK = '},"deliverySeq":';

/**
 * A 2xx answer's text into the outcome the engine gets: what `JSON.parse` of the whole text gives
 * (`{ outcome, deliverySeq }`, `deliverySeq` only when present), and throws as it does. A served
 * result — `{"outcome":{"type":"result","valueJson":"…"}}` with `,"deliverySeq":<n>` before the last
 * brace or not, as the gateway writes it — is read in place: only the value's string literal is
 * parsed (`JSON.parse` of the literal alone, which refuses anything but one whole JSON string), the
 * sequence's digits read as a number; anything else (an error, a stop, any other spacing or order)
 * goes through `JSON.parse` as before.
 */
function servedOutcome(text: string): { outcome: unknown; deliverySeq?: number } {
  if (text.startsWith(RESULT_HEAD)) {
    const last = text.length - 1;
    let literalEnd = -1;
    let deliverySeq: number | undefined;
    if (text.endsWith('"}}')) literalEnd = last - 1;
    else if (text.charCodeAt(last) === 0x7d) {
      const mark = text.lastIndexOf(SEQ_MARK);
      const digits = mark + SEQ_MARK.length;
      if (mark > 0 && text.charCodeAt(mark - 1) === 0x22 && isJsonInteger(text, digits, last)) {
        literalEnd = mark;
        deliverySeq = Number(text.slice(digits, last));
      }
    }
    if (literalEnd > RESULT_HEAD.length) {
      let valueJson: unknown;
      try {
        valueJson = JSON.parse(text.slice(RESULT_HEAD.length - 1, literalEnd));
      } catch {
        valueJson = undefined;
      }
      if (typeof valueJson === 'string')
        return deliverySeq === undefined
          ? { outcome: { type: 'result', valueJson } }
          : { outcome: { type: 'result', valueJson }, deliverySeq };
    }
  }
  const body = JSON.parse(text) as { outcome: unknown; deliverySeq?: number };
  return body.deliverySeq === undefined ? { outcome: body.outcome } : body;
}

/** `text[from, to)` is a JSON number with no sign, fraction or exponent: `0` or `[1-9][0-9]*`. */
function isJsonInteger(text: string, from: number, to: number): boolean {
  if (to <= from || to - from > 15) return false;
  const first = text.charCodeAt(from);
  if (first === 0x30) return to - from === 1;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

for (let i = 0; i < WARM; i++) once();
const started = process.hrtime.bigint();
for (let i = 0; i < N; i++) once();
const ns = Number(process.hrtime.bigint() - started);
if (N > 0 && !process.env.QUIET) console.log(`${PART}: ${(ns / N).toFixed(0)} ns a part (hint; ${sink})`);
