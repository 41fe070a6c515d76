/**
 * A TCP proxy in front of the API server for one client, which can stop answering: `hang()` stops
 * forwarding in both directions and leaves every connection open (an API server or network that
 * hangs, not one that refuses); `release()` resets the connections that hung (as a load balancer
 * timing them out would: nothing held is delivered late) and forwards new ones again. TLS passes
 * through untouched.
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
  const stuck = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const up = connect(Number(target.port), target.hostname);
    const pair: [Socket, Socket] = [client, up];
    pairs.add(pair);
    const forward = (from: Socket, to: Socket) => {
      from.on('data', (chunk: Buffer) => {
        if (hung) stuck.add(pair);
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
      for (const [a, b] of stuck) {
        a.destroy();
        b.destroy();
      }
      stuck.clear();
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
