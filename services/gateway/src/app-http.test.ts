/**
 * The App HTTP client against real listeners on 127.0.0.1 (issue 9 §3): with private networks off
 * no spelling of an internal address reaches a listener, name resolution is checked where the
 * socket connects (DNS rebinding), and an answer is read only up to its cap.
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AnswerTooLargeError,
  AppTimeoutError,
  BlockedAddressError,
  guardedLookup,
  postToApp,
  type Resolver,
} from './app-http.ts';

let server: Server;
let port: number;
let hits = 0;
let streamed = 0;
let trickleClosed = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => {
      if (req.url === '/big') {
        // Streams without a length until the client hangs up: the reader must stop at its cap.
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) streamed += chunk.length;
          if (!res.destroyed) res.once('drain', pump);
        };
        res.on('close', () => undefined);
        pump();
        return;
      }
      if (req.url === '/trickle') {
        // A byte every 50 ms, each well inside the idle timeouts: only the whole deadline ends it.
        res.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => res.write(' '), 50);
        res.on('close', () => {
          clearInterval(timer);
          trickleClosed++;
        });
        return;
      }
      if (req.url === '/declared') {
        res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
        res.write('{');
        return;
      }
      res.writeHead(200).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const opts = { timeoutMs: 3000, allowPrivate: false, maxResponseBytes: 1024 * 1024 };
const loopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

describe('App HTTP client: no way into the platform network', () => {
  it('no spelling of a loopback or unspecified address reaches a 127.0.0.1 listener', async () => {
    const urls = [
      `http://127.0.0.1:${port}/`,
      `http://127.1:${port}/`,
      `http://2130706433:${port}/`,
      `http://0x7f.1:${port}/`,
      `http://0x7f000001:${port}/`,
      `http://017700000001:${port}/`,
      `http://0177.0.0.1:${port}/`,
      `http://0.0.0.0:${port}/`,
      `http://0:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::ffff:7f00:1]:${port}/`,
      `http://[0:0:0:0:0:ffff:127.0.0.1]:${port}/`,
      `http://[::127.0.0.1]:${port}/`,
      `http://[::1]:${port}/`,
      `http://[::]:${port}/`,
      `http://[64:ff9b::127.0.0.1]:${port}/`,
      `http://[2002:7f00:1::1]:${port}/`,
      `https://127.0.0.1:${port}/`,
      `http://localhost:${port}/`,
    ];
    for (const url of urls)
      await expect(postToApp(url, {}, '{}', opts), url).rejects.toBeInstanceOf(BlockedAddressError);
    expect(hits).toBe(0);
  });

  it('WHATWG URL parsing turns numeric IPv4 spellings into the dotted form the check sees', () => {
    for (const host of ['2130706433', '0x7f.1', '017700000001', '0x7f.0.0.1', '127.1'])
      expect(new URL(`http://${host}/`).hostname, host).toBe('127.0.0.1');
    expect(new URL('http://[::ffff:127.0.0.1]/').hostname).toBe('[::ffff:7f00:1]');
  });

  it('checks the resolved address where the socket connects: a rebinding resolver never wins', async () => {
    // A resolver that answers public first, then loopback (the classic rebinding play).
    let calls = 0;
    const rebinding: Resolver = async () => {
      calls++;
      return calls === 1 ? [{ address: '93.184.215.14', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    };
    const lookup = guardedLookup(rebinding, false);
    const run = (all: boolean) =>
      new Promise<{ err: Error | null; address: string | LookupAddress[] }>((resolve) =>
        lookup('rebind.example', { all }, (err, address) => resolve({ err, address })),
      );
    expect(await run(false)).toEqual({ err: null, address: '93.184.215.14' });
    const second = await run(true);
    expect(second.err).toBeInstanceOf(BlockedAddressError);
    // Through a real request: the only resolution is the one the socket uses, and it is refused.
    await expect(
      postToApp(`http://rebind.example:${port}/`, {}, '{}', { ...opts, resolver: rebinding }),
    ).rejects.toBeInstanceOf(BlockedAddressError);
    expect(calls).toBe(3);
    // A mixed answer (public + internal) is refused as a whole: no fallback to the internal one.
    const mixed: Resolver = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '127.0.0.1', family: 4 },
      { address: '::ffff:127.0.0.1', family: 6 },
    ];
    for (const all of [false, true]) {
      const err = await new Promise<Error | null>((resolve) =>
        guardedLookup(mixed, false)('mixed.example', { all }, (e) => resolve(e)),
      );
      expect(err).toBeInstanceOf(BlockedAddressError);
    }
    await expect(
      postToApp(`http://mixed.example:${port}/`, {}, '{}', { ...opts, resolver: mixed }),
    ).rejects.toBeInstanceOf(BlockedAddressError);
    expect(hits).toBe(0);
  });

  it('the socket connects to exactly the address the guarded lookup handed it (private networks on)', async () => {
    let calls = 0;
    const counting: Resolver = async (host) => {
      calls++;
      return loopback(host);
    };
    const before = hits;
    const ok = await postToApp(`http://app.example:${port}/`, {}, '{}', {
      ...opts,
      allowPrivate: true,
      resolver: counting,
    });
    expect(ok).toEqual({ status: 200, text: '{"ok":true}' });
    expect(calls).toBe(1);
    expect(hits).toBe(before + 1);
    const direct = await postToApp(`http://localhost:${port}/`, {}, '{}', { ...opts, allowPrivate: true });
    expect(direct.status).toBe(200);
  });

  it('keeps a connection for the next call, but never for a call made under stricter rules', async () => {
    let calls = 0;
    const counting: Resolver = async (host) => {
      calls++;
      return loopback(host);
    };
    const sockets = new Set<unknown>();
    const track = (socket: unknown) => sockets.add(socket);
    server.on('connection', track);
    try {
      const before = hits;
      const url = `http://pooled.example:${port}/`;
      for (let i = 0; i < 3; i++) {
        expect(await postToApp(url, {}, '{}', { ...opts, allowPrivate: true, resolver: counting })).toEqual({
          status: 200,
          text: '{"ok":true}',
        });
        // undici frees the connection a turn after the answer ends (a call sent in the same turn
        // opens another); a gateway's next call always comes turns later, after the journal's.
        await new Promise((r) => setImmediate(r));
      }
      // One resolution, one connection: the next calls rode the pooled one.
      expect(calls).toBe(1);
      expect(sockets.size).toBe(1);
      // Same App, same resolver, private networks off: the pooled loopback connection is not used.
      await expect(postToApp(url, {}, '{}', { ...opts, resolver: counting })).rejects.toBeInstanceOf(
        BlockedAddressError,
      );
      expect(calls).toBe(2);
      expect(hits).toBe(before + 3);
    } finally {
      server.off('connection', track);
    }
  });

  it('stops reading an answer at the cap, declared or streamed', async () => {
    const allow = { ...opts, allowPrivate: true, maxResponseBytes: 256 * 1024 };
    const err = await postToApp(`http://127.0.0.1:${port}/big`, {}, '{}', allow).catch((e: unknown) => e);
    // Refused for its size (not a timeout: the server never ends this answer).
    expect(err).toBeInstanceOf(AnswerTooLargeError);
    expect((err as AnswerTooLargeError).maxBytes).toBe(256 * 1024);
    // The server could not push much more than the cap plus socket buffers before the hang-up.
    await new Promise((r) => setTimeout(r, 100));
    expect(streamed).toBeLessThan(32 * 1024 * 1024);
    await expect(postToApp(`http://127.0.0.1:${port}/declared`, {}, '{}', allow)).rejects.toBeInstanceOf(
      AnswerTooLargeError,
    );
  });

  it("ends a trickling answer at the call's whole deadline and drops its connection", async () => {
    const allow = { ...opts, allowPrivate: true, timeoutMs: 400 };
    const err = await postToApp(`http://127.0.0.1:${port}/trickle`, {}, '{}', allow).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppTimeoutError);
    await expect.poll(() => trickleClosed).toBe(1);
    // The next call on the same rules gets a connection and its answer.
    expect(await postToApp(`http://127.0.0.1:${port}/`, {}, '{}', allow)).toEqual({
      status: 200,
      text: '{"ok":true}',
    });
  });

  it('makes no AbortSignal per call (its timer and listener were a call cost): one timer of its own', async () => {
    const real = AbortSignal.timeout;
    let made = 0;
    AbortSignal.timeout = (ms: number) => {
      made++;
      return real.call(AbortSignal, ms);
    };
    try {
      const allow = { ...opts, allowPrivate: true };
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => postToApp(`http://127.0.0.1:${port}/`, {}, '{}', allow)),
      );
      expect(answers.every((a) => a.status === 200 && a.text === '{"ok":true}')).toBe(true);
      expect(made).toBe(0);
    } finally {
      AbortSignal.timeout = real;
    }
  });

  it('an App URL is parsed once, its rules applied every call: a literal IP refused under stricter rules after it passed', async () => {
    const before = hits;
    const url = `http://127.0.0.1:${port}/`;
    for (const allowPrivate of [true, false, true, false]) {
      const call = postToApp(url, {}, '{}', { ...opts, allowPrivate });
      if (allowPrivate) expect((await call).status).toBe(200);
      else await expect(call).rejects.toThrow(`127.0.0.1 is loopback`);
    }
    // A blocked spelling stays blocked call after call (a remembered URL is not a remembered pass).
    for (let i = 0; i < 3; i++)
      await expect(postToApp(`http://[::ffff:7f00:1]:${port}/`, {}, '{}', opts)).rejects.toThrow(
        '::ffff:7f00:1 is ipv4Mapped:loopback',
      );
    await expect(postToApp(`ftp://127.0.0.1:${port}/`, {}, '{}', opts)).rejects.toThrow(
      'ftp: is not http(s)',
    );
    await expect(postToApp('not a url', {}, '{}', opts)).rejects.toThrow(TypeError);
    expect(hits).toBe(before + 2);
  });

  it('a new connection to a named App resolves and checks again; a kept one is not re-resolved', async () => {
    // Private networks on for the loopback listener (the only rule that lets a test connect); the
    // second answer is empty, which the guarded lookup refuses under every rule.
    let answers = 0;
    const turning: Resolver = async () => {
      answers++;
      return answers === 1 ? [{ address: '127.0.0.1', family: 4 }] : [];
    };
    const url = `http://turning.example:${port}/`;
    const allow = { ...opts, allowPrivate: true, resolver: turning };
    expect((await postToApp(url, {}, '{}', allow)).status).toBe(200);
    await new Promise((r) => setImmediate(r));
    expect((await postToApp(url, {}, '{}', allow)).status).toBe(200);
    // The pooled connection served the second call: no second resolution.
    expect(answers).toBe(1);
    // The App's side closes it: the next call, same rules, needs a new connection, which resolves
    // again and is refused there.
    server.closeAllConnections();
    await new Promise((r) => setTimeout(r, 20));
    await expect(postToApp(url, {}, '{}', allow)).rejects.toThrow('turning.example resolves to nothing');
    expect(answers).toBe(2);
  });
});
