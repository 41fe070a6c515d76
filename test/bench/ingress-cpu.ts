/**
 * `node test/bench/ingress-cpu.ts`: the CPU of fastify's ingress for a runner-sized JSON POST, by
 * way of reading the body (round 35, `call-gw`). One process: a fastify server on loopback and an
 * undici client sending `N` (default 20000) sequential requests of a binding call's body; per
 * request this process's CPU (client + server, `process.cpuUsage`) for each VARIANT, interleaved
 * ABAB… `ROUNDS` times (default 4), so the differences are the server's body handling alone:
 *   string  — fastify's `parseAs: 'string'` + the depth scan + fastify's JSON parser (the gateway's)
 *   nodepth — the same without the depth scan
 *   none    — no body read at all (a GET-like floor: routing, hooks, reply)
 */
import Fastify from 'fastify';
import { Agent, request } from 'undici';
import { jsonDepthExceeds } from '../../services/gateway/src/json-depth.ts';

const N = Number(process.env.N ?? 20000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const body = JSON.stringify({ index: 7, binding: 'bench.ping', argsJson: '{"i":1}', attempt: 1 });

async function server(variant: string) {
  const app = Fastify();
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, text, done) => {
    if (variant === 'string' && jsonDepthExceeds(text as string, 64))
      return done(new Error('deep'), undefined);
    jsonParser(req, text as string, done);
  });
  app.post('/c/:id/calls', async () => '{"outcome":{"type":"result","valueJson":"1"}}');
  app.post(
    '/none/:id/calls',
    { preParsing: (_q, _r, _p, done) => done(null, null as never) },
    async () => 'x',
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

const results = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++) {
  for (const variant of ['string', 'nodepth', 'none']) {
    const app = await server(variant);
    const port = (app.server.address() as { port: number }).port;
    const agent = new Agent();
    const path = variant === 'none' ? '/none/r1/calls' : '/c/r1/calls';
    const send = async () => {
      const res = await request(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        dispatcher: agent,
      });
      await res.body.text();
    };
    for (let i = 0; i < 2000; i++) await send();
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) await send();
    const c1 = process.cpuUsage(c0);
    const us = (c1.user + c1.system) / N;
    results.set(variant, [...(results.get(variant) ?? []), us]);
    await agent.close();
    await app.close();
  }
}
for (const [v, xs] of results)
  console.log(`${v.padEnd(8)} CPU a request (client + server) µs: ${xs.map((x) => x.toFixed(1)).join(' ')}`);
