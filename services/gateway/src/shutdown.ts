/**
 * Graceful gateway shutdown for rolling updates. Closing listeners at SIGTERM drops requests: the
 * load balancer (Endpoints, kube-proxy, ingress) still routes to the pod for a few seconds. So:
 * 1. fail /readyz at once (every listener), so the pod leaves the Service's endpoints;
 * 2. keep serving everything for `delayMs` while that propagates;
 * 3. close: long waits (Prefer: wait, SSE) end with what they have (app `closing` signal), new
 *    connections are refused, in-flight requests finish; then the dependencies close.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { internalCallPaths } from './internal-call-path.ts';

interface ShutdownOptions {
  apps: FastifyInstance[];
  delayMs: number;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Runs after the delay, before the listeners close (stop background loops). */
  beforeClose?: () => void;
  /** Runs after every listener closed (close Redis, queues). */
  afterClose: () => Promise<void>;
  /** After the delay, how long in-flight requests get before their connections are cut. */
  drainTimeoutMs?: number;
}

interface Shutdown {
  draining(): boolean;
  /** Starts the sequence (idempotent); resolves when everything is closed. */
  begin(reason: string): Promise<void>;
}

const NOT_READY = {
  type: 'https://islet.dev/problems/unavailable',
  title: 'The service is not available',
  status: 503,
  detail: 'The gateway is shutting down',
  code: 'unavailable',
};

/** Adds the readiness gate to each app; call before `listen`. */
export function createShutdown(options: ShutdownOptions): Shutdown {
  let draining = false;
  let done: Promise<void> | undefined;
  for (const app of options.apps) {
    // Callback-style: every request passes these two; no promise and microtask each.
    app.addHook('onRequest', (request, reply, done) => {
      if (draining && request.url.split('?')[0] === '/readyz') {
        reply.code(503).type('application/problem+json').send(NOT_READY);
        return;
      }
      done();
    });
    // No further request on a connection once draining: it ends after this response (including a
    // long wait that began before SIGTERM), so clients and proxies reconnect to a ready pod, and
    // a keep-alive connection gone idle after close() began cannot hold the close up.
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (draining) reply.header('connection', 'close');
      done(null, payload);
    });
  }
  return {
    draining: () => draining,
    begin(reason) {
      done ??= (async () => {
        draining = true;
        // The runner's calls served ahead of fastify go its way from now (its connection: close).
        for (const app of options.apps) internalCallPaths.get(app)?.beginDraining();
        options.logger.info({ reason, delayMs: options.delayMs }, 'gateway draining: readiness off');
        if (options.delayMs > 0) await new Promise((r) => setTimeout(r, options.delayMs));
        options.beforeClose?.();
        options.logger.info({}, 'gateway closing listeners');
        const closed = Promise.all(options.apps.map((a) => a.close()));
        // Idle keep-alive connections are closed at once; a request still running at the deadline
        // (a client that never reads its response) does not hold the pod past its grace period.
        const drainTimeoutMs = options.drainTimeoutMs ?? 30_000;
        const cut = setTimeout(() => {
          // Said once, at warn: whoever was cut off (a client that never read its answer) saw a
          // reset, and the operator should know the pod did not drain cleanly.
          options.logger.warn(
            { drainTimeoutMs },
            'gateway drain deadline passed: cutting the connections still open',
          );
          for (const a of options.apps) a.server.closeAllConnections();
        }, drainTimeoutMs);
        await closed;
        clearTimeout(cut);
        await options.afterClose();
      })();
      return done;
    },
  };
}
