/**
 * The lone call's transport (gateway-post.ts) to an `https:` gateway: the server's certificate is
 * checked against the process's trusted authorities (an untrusted one fails the request, and no
 * body is sent), and a trusted one carries the POST and its answer on one kept-alive socket.
 * The key and certificate are a test fixture (self-signed for `localhost`, valid to 2126), made
 * for this file only: `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes
 * -days 36500 -subj /CN=localhost -addext subjectAltName=DNS:localhost`.
 */
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayPost } from './gateway-post.ts';

const CERT = `-----BEGIN CERTIFICATE-----
MIIBljCCATugAwIBAgIUIEd3ohye/ZCF7iAmuS8/OOMXFNEwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwNTIzMzcwMFoYDzIxMjYxMTEx
MjMzNzAwWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQyp3eEF4IigDmqL3zxjIQDPocATC71tWN7fcp+UCy6nezkhSyXcnrG
57pOi6fi9TB3XbH5Z/gL6PNxDL4vatCno2kwZzAdBgNVHQ4EFgQUFmUit8s8MFub
59p1aaskZlqeK3gwHwYDVR0jBBgwFoAUFmUit8s8MFub59p1aaskZlqeK3gwDwYD
VR0TAQH/BAUwAwEB/zAUBgNVHREEDTALgglsb2NhbGhvc3QwCgYIKoZIzj0EAwID
SQAwRgIhAL6YTq1XF3PBG+GzMiPR88l0e9PLoY7UbuiQS7KIVXA1AiEAr1xTSjSu
XX9A2L3flyITP3VMODeYzxZ3DkfIssfdsUE=
-----END CERTIFICATE-----
`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgl3g69A8PDze+tO8b
IzB/r4t613FbJsiXFS3FW+hOB8ChRANCAAQyp3eEF4IigDmqL3zxjIQDPocATC71
tWN7fcp+UCy6nezkhSyXcnrG57pOi6fi9TB3XbH5Z/gL6PNxDL4vatCn
-----END PRIVATE KEY-----
`;

let server: Server;
let url = '';
let connections = 0;
let bodies = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = createServer({ cert: CERT, key: KEY }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      bodies++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ body, auth: req.headers.authorization }));
    });
  });
  server.on('secureConnection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, 'localhost', r));
  url = `https://localhost:${(server.address() as { port: number }).port}/internal/v1/calls`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  if (server) await new Promise((r) => server.close(r));
});

const headers = { authorization: 'Bearer tok', 'content-type': 'application/json' };

describe('the lone call transport over TLS', () => {
  it('refuses a gateway whose certificate no trusted authority signed, sending nothing', async () => {
    const post = new GatewayPost();
    try {
      await expect(post.post(url, headers, '{"n":0}')).rejects.toThrow(/self[- ]signed|certificate/i);
      expect(bodies).toBe(0);
    } finally {
      post.close();
    }
  });

  it('posts to a trusted gateway and reuses its one socket call after call', async () => {
    setDefaultCACertificates([...getCACertificates('default'), CERT]);
    const post = new GatewayPost();
    try {
      const before = connections;
      for (let i = 0; i < 3; i++) {
        const answer = await post.post(url, headers, JSON.stringify({ n: i }));
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.text)).toEqual({ body: JSON.stringify({ n: i }), auth: 'Bearer tok' });
      }
      expect(connections - before).toBe(1);
      expect(bodies).toBe(3);
    } finally {
      post.close();
    }
  });
});
