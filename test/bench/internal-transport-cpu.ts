/**
 * `node test/bench/internal-transport-cpu.ts`: what the runner's calls cost the gateway in their
 * transport alone: fastify's routes against the fast path ahead of them (`internal-fast-path.ts`).
 * Two apps over the same real deps in this process (a redis-server of its own), one as main.ts
 * builds it (the fast path on) and one with `internalFastPath: false` (every request through
 * fastify's routes, as before round 29); a client process (`internal-transport-client.ts`: the
 * runner's real gateway client) sends each of them calls in blocks, interleaved fast, fastify,
 * fastify, fast (`CYCLES` times, default 3), so both meet the same minutes, heap and JIT state.
 *
 * The calls are replays: each index is journaled once (a binding the run does not have: the
 * outcome `unknown-binding`, no App), then sent again and again, so the claim answers `done` and
 * the gateway's work is the transport, the run's cached record and one Redis script that writes
 * nothing. Prints this process's CPU (user + system, `process.cpuUsage`: only the gateway runs
 * here) a call for each block, lone calls (`LONE`, default 3000 a block) and 100-call batches
 * (`BATCHED`, default 6000 calls a block), and the mean of each side. `LOOPS` (default 1) lone
 * calls go at once, each loop one call after another: one loop makes every call a cold wake-up of
 * the gateway, more keep it busy (what it costs hot).
 *
 * `STUB=1` answers the claim from memory (no Redis: the journal's `done` as Redis would give it),
 * so a call's gateway work is its transport and a few lookups in memory.
 * `COUNT=1` then counts the async resources (promises, immediates, ticks, fastify's body
 * `AsyncResource`, …) this process creates a call on each side, by type, over one more block each
 * (`async_hooks`, on only for those blocks: a count no load moves).
 *
 *   node test/bench/internal-transport-cpu.ts
 *   LOOPS=8 LONE=8000 node test/bench/internal-transport-cpu.ts
 */
import { createHook } from 'node:async_hooks';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../services/gateway/src/app.ts';
import { startGatewayDeps } from '../../services/gateway/test/gateway-harness.ts';

const CYCLES = Number(process.env.CYCLES ?? 3);
const LONE = Number(process.env.LONE ?? 3000);
const BATCHED = Number(process.env.BATCHED ?? 6000);
const INDEXES = 100;
const BINDING = 'none.such';
/** Lone calls' loops at once (1: one call after another, each a wake-up; more: a busy gateway). */
const LOOPS = Number(process.env.LOOPS ?? 1);
/** `fast` or `fastify`: measure that side alone (to profile it: `node --cpu-prof …`). */
const ONLY = process.env.ONLY;

const gateway = await startGatewayDeps();
const { deps, config } = gateway;
const apps: FastifyInstance[] = [];
const child = fork(join(import.meta.dirname, 'internal-transport-client.ts'), { stdio: 'inherit' });
try {
  const listen = async (options: Parameters<typeof buildApp>[1]) => {
    const app = await buildApp(deps, options);
    apps.push(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  };
  const sides = { fast: await listen({}), fastify: await listen({ internalFastPath: false }) };
  await deps.tenants.createTenant({ id: 'bench', name: 'Bench' });
  const key = (await deps.tenants.createKey('bench', ['apps.use'])).key;
  // A run a loop: each loop's calls go alone, as one program's sequential calls do.
  const runIds: string[] = [];
  for (let i = 0; i < LOOPS; i++) {
    const submitted = await apps[0]!.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${key}` },
      payload: { code: 'return 1', description: 'bench', sessionId: 's', turnId: 't', callId: `c${i}` },
    });
    runIds.push(submitted.json().id as string);
  }
  const send = async (url: string, calls: number, mode: 'lone' | 'batch') => {
    const done = once(child, 'message');
    child.send({
      url,
      token: config.ISLET_INTERNAL_TOKEN,
      runIds,
      binding: BINDING,
      calls,
      indexes: INDEXES,
      mode,
      loops: LOOPS,
    });
    await done;
  };
  /** CPU µs a call of this process while `calls` are served. */
  const block = async (url: string, calls: number, mode: 'lone' | 'batch') => {
    const before = process.cpuUsage();
    await send(url, calls, mode);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / calls;
  };
  // Journal every index of every run once, then warm both sides up.
  await send(sides.fastify, INDEXES * LOOPS, 'lone');
  if (process.env.STUB === '1') {
    // The claim answered from memory as Redis would for a journaled call: what is left of a call's
    // gateway work is its transport (and the serve's few lookups in memory).
    const outcome = {
      type: 'error' as const,
      name: 'AppCallFailed' as const,
      message: 'stub',
      details: { reason: 'unknown-binding' },
    };
    deps.journal.claim = async () => ({ kind: 'done', outcome, deliverySeq: 1 });
  }
  for (const url of [sides.fast, sides.fastify]) {
    await send(url, 2000, 'lone');
    await send(url, 2000, 'batch');
  }
  for (const mode of ['lone', 'batch'] as const) {
    const calls = mode === 'lone' ? LONE : BATCHED;
    const got: Record<'fast' | 'fastify', number[]> = { fast: [], fastify: [] };
    for (let c = 0; c < CYCLES; c++)
      for (const side of ['fast', 'fastify', 'fastify', 'fast'] as const)
        if (!ONLY || ONLY === side) got[side].push(await block(sides[side], calls, mode));
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const show = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');
    console.log(
      `${mode === 'lone' ? `lone calls, ${LOOPS} loop${LOOPS > 1 ? 's' : ''}` : '100-call batches'} (${calls} a block), gateway CPU µs a call: ` +
        `fast path ${show(got.fast)} (mean ${mean(got.fast).toFixed(1)}); ` +
        `fastify ${show(got.fastify)} (mean ${mean(got.fastify).toFixed(1)})`,
    );
  }
  if (process.env.COUNT === '1')
    for (const mode of ['lone', 'batch'] as const)
      for (const side of ['fast', 'fastify'] as const) {
        const calls = 1000;
        const byType = new Map<string, number>();
        const hook = createHook({
          init(_id, type) {
            byType.set(type, (byType.get(type) ?? 0) + 1);
          },
        });
        hook.enable();
        await send(sides[side], calls, mode);
        hook.disable();
        const total = [...byType.values()].reduce((s, n) => s + n, 0);
        const top = [...byType]
          .sort((a, b) => b[1] - a[1])
          .map(([type, n]) => `${type} ${(n / calls).toFixed(2)}`)
          .join(', ');
        console.log(`async resources a call, ${mode}, ${side}: ${(total / calls).toFixed(2)} (${top})`);
      }
} finally {
  child.kill();
  for (const app of apps) await app.close();
  await gateway.close();
}
