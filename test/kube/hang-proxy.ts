/**
 * A TCP proxy in front of the API server for one client, which can stop answering: `hang()` stops
 * forwarding in both directions and leaves every connection open (an API server or network that
 * hangs, not one that refuses), `release()` forwards again. TLS passes through untouched.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface HangProxy {
  server: string;
  hang(): void;
  release(): void;
  stop(): Promise<void>;
}

export async function startHangProxy(upstream: string): Promise<HangProxy> {
  const target = new URL(upstream);
  const pairs = new Set<[Socket, Socket]>();
  let hung = false;
  let held: [Socket, Buffer][] = [];
  const server: Server = createServer((client) => {
    const up = connect(Number(target.port), target.hostname);
    const pair: [Socket, Socket] = [client, up];
    pairs.add(pair);
    // Bytes read while hung are held back, not dropped, and go out on release.
    const forward = (from: Socket, to: Socket) => {
      from.on('data', (chunk: Buffer) => {
        if (hung) held.push([to, chunk]);
        else to.write(chunk);
      });
      from.on('end', () => to.end());
    };
    forward(client, up);
    forward(up, client);
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      up.destroy();
    };
    client.on('error', close);
    up.on('error', close);
    client.on('close', close);
    up.on('close', close);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const port = addr && typeof addr === 'object' ? addr.port : 0;
  return {
    server: `https://127.0.0.1:${port}`,
    hang() {
      hung = true;
    },
    release() {
      hung = false;
      const out = held;
      held = [];
      for (const [to, chunk] of out) if (!to.destroyed) to.write(chunk);
    },
    async stop() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
