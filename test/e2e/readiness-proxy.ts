/**
 * A small load balancer for the rolling-restart test, behaving as a Service + kube-proxy/ingress
 * does: it polls each backend's /readyz (the endpoints controller following readiness probes) and
 * sends each request, on a new connection, to the next ready backend. A backend that stops being
 * ready leaves the rotation at the next poll; a request routed to a closed port fails (counted).
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import { freePort } from '@islet/testkit';

export interface ReadinessProxy {
  url: string;
  /** Backends ready at the last poll. */
  ready(): string[];
  stop(): Promise<void>;
}

export async function startReadinessProxy(backends: string[], pollMs = 100): Promise<ReadinessProxy> {
  let ready = new Set<string>();
  let next = 0;
  let stopped = false;
  const poll = async () => {
    const now = new Set<string>();
    await Promise.all(
      backends.map(async (b) => {
        try {
          const r = await fetch(`${b}/readyz`, { signal: AbortSignal.timeout(500) });
          if (r.ok) now.add(b);
        } catch {
          // not ready
        }
      }),
    );
    ready = now;
  };
  await poll();
  const loop = (async () => {
    while (!stopped) {
      await new Promise((r) => setTimeout(r, pollMs));
      await poll();
    }
  })();
  const server: Server = createServer((req, res) => {
    const pool = backends.filter((b) => ready.has(b));
    const target = pool[next++ % Math.max(pool.length, 1)];
    if (!target) {
      res.writeHead(503).end('no ready backend');
      return;
    }
    const u = new URL(req.url ?? '/', target);
    const out = httpRequest(
      u,
      { method: req.method, headers: { ...req.headers, host: u.host }, agent: false },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
      },
    );
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'x-proxy-error': err.message }).end(err.message);
      else res.destroy(err);
    });
    req.pipe(out);
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${port}`,
    ready: () => [...ready],
    async stop() {
      stopped = true;
      await loop;
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
