/**
 * The chaos driver's programs and helpers: the three kinds of program (parallel calls with a
 * Promise.race, an approval-gated write, both mixed), the counting App (every delivery counted by
 * Idempotency-Key), the fault-free reference run in the engine in-process, and a retrying client
 * that spreads requests over the gateways.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { type BindingCall, type BindingOutcome, createEngine } from '@islet/engine';
import { jsonRequest, type Loose, readBody, sleep } from '../e2e/helpers.ts';

export type Kind = 'parallel' | 'ask' | 'mixed';
export interface Spec {
  i: number;
  kind: Kind;
  deny: boolean;
  code: string;
}

export const answerOf = (tool: string, args: unknown) =>
  createHash('sha256')
    .update(`${tool}:${JSON.stringify(args)}`)
    .digest('hex')
    .slice(0, 10);

export function specFor(i: number): Spec {
  const kind: Kind = (['parallel', 'ask', 'mixed'] as const)[i % 3]!;
  const deny = kind !== 'parallel' && i % 4 === 1;
  const guard = (expr: string) =>
    `(async () => { try { return (${expr}).v } catch (e) { return e.name + ":" + ((e.details && e.details.reason) || "") } })()`;
  const code =
    kind === 'parallel'
      ? `const xs = await Promise.all([0, 1, 2, 3].map((k) => ${guard('await apps.chaos.read({ run: ' + i + ', k })')}));
const first = await Promise.race([${guard(`await apps.chaos.read({ run: ${i}, k: 9 })`)}, ${guard(`await apps.chaos.slow({ run: ${i}, k: 10 })`)}]);
return { xs, first };`
      : kind === 'ask'
        ? `const a = await ${guard(`await apps.chaos.read({ run: ${i}, k: 0 })`)};
const w = await ${guard(`await apps.chaos.write({ run: ${i}, a })`)};
return { a, w };`
        : `const [r, w] = await Promise.all([${guard(`await apps.chaos.read({ run: ${i}, k: 1 })`)}, ${guard(`await apps.chaos.write({ run: ${i}, k: 2 })`)}]);
const after = await ${guard(`await apps.chaos.read({ run: ${i}, k: 3, r, w })`)};
return { r, w, after };`;
  return { i, kind, deny, code };
}

/** The App: deterministic answers, every delivery counted by Idempotency-Key. */
export async function startCountingApp() {
  const deliveries = new Map<string, { count: number; tool: string; args: string }>();
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { tool: string; arguments: unknown };
    const key = String(req.headers['idempotency-key'] ?? '');
    const seen = deliveries.get(key);
    if (seen) seen.count++;
    else deliveries.set(key, { count: 1, tool: body.tool, args: JSON.stringify(body.arguments) });
    await sleep(body.tool === 'slow' ? 400 : body.tool === 'write' ? 30 : 20 + Math.random() * 60);
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ v: answerOf(body.tool, body.arguments) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/app`,
    deliveries,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The fault-free result: the same program in the engine in-process, same App answers, same decisions. */
export async function faultFree(specs: Spec[]): Promise<Map<number, unknown>> {
  const engine = createEngine();
  const out = new Map<number, unknown>();
  try {
    for (const spec of specs) {
      const onCall = async (call: BindingCall): Promise<BindingOutcome> => {
        const tool = call.binding.split('.')[1] ?? '';
        if (tool === 'write' && spec.deny)
          return { type: 'error', name: 'AppCallDenied', message: 'denied', details: {} };
        await sleep(tool === 'slow' ? 400 : 20);
        return {
          type: 'result',
          valueJson: JSON.stringify({ v: answerOf(tool, JSON.parse(call.argsJson)) }),
        };
      };
      const res = await engine.execute(spec.code, {
        bindings: ['chaos.read', 'chaos.slow', 'chaos.write'],
        onCall,
        limits: { timeoutMs: 30_000 },
      });
      out.set(spec.i, res.valueJson === undefined ? undefined : JSON.parse(res.valueJson));
    }
  } finally {
    await engine.close();
  }
  return out;
}

export function client(urls: () => string[], key: string) {
  let n = 0;
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    for (let attempt = 0; ; attempt++) {
      const list = urls();
      const base = list[n++ % list.length]!;
      try {
        const res = await fetch(`${base}${path}`, {
          ...jsonRequest(key, method, body, headers),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await res.text();
        if (res.status >= 500 && attempt < 40) {
          await sleep(250);
          continue;
        }
        return { status: res.status, body: text ? (JSON.parse(text) as Loose) : undefined };
      } catch (error) {
        if (attempt >= 40) throw error;
        await sleep(250);
      }
    }
  };
}
