/**
 * `node test/bench/call-runner-parts.ts` (round 50, `binding-runner`): the runner's own pieces of a
 * lone binding call, without a socket, each run `N` times (default 4000) after `WARM` (default 4000)
 * in one process (`PART`):
 * - `answer`: a new `GatewayAnswer` fed the gateway's answer to a lone call (node:http's head for
 *   `writeHead(200, {content-type, content-length})`: Date, Connection, Keep-Alive) in one read, and
 *   its text;
 * - `request`: `GatewayPost`'s bytes of the call's POST (its head, the client's two headers, the
 *   body) and the body's JSON as `gateway-client.ts` makes it.
 * `RUNNER_DIR=<dir>` imports the runner's files from there instead (e.g. the base's, put in a
 * directory beside the tree). Counted, not timed: run it under callgrind with `N=0` and `N=<n>`
 * (`call-runner-parts.sh`), which reads the same at any load. Without valgrind it prints ns a part
 * (a hint).
 */
import type * as AnswerModule from '../../services/runner/src/gateway-answer.ts';

const dir = process.env.RUNNER_DIR ?? '../../services/runner/src';
const { GatewayAnswer } = (await import(`${dir}/gateway-answer.ts`)) as typeof AnswerModule;

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
  throw new Error(`unknown PART ${PART}`);
}

for (let i = 0; i < WARM; i++) once();
const started = process.hrtime.bigint();
for (let i = 0; i < N; i++) once();
const ns = Number(process.hrtime.bigint() - started);
if (N > 0 && !process.env.QUIET) console.log(`${PART}: ${(ns / N).toFixed(0)} ns a part (hint; ${sink})`);
