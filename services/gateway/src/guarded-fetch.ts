/**
 * A `fetch` for the MCP client of `mcp` connections that keeps the gateway's outbound address
 * rules: the host is resolved by the socket's own `lookup` (non-public addresses refused unless
 * ISLET_APP_ALLOW_PRIVATE_NETWORKS), and a literal IP is checked before connecting. Node's global
 * fetch cannot take a `lookup`, so this speaks node:http and streams the body back as a Response
 * (the Streamable HTTP transport reads SSE from it).
 */
import { lookup as dnsLookup } from 'node:dns';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import {
  AnswerTooLargeError,
  addressClass,
  BlockedAddressError,
  guardedLookup,
  type Resolver,
} from './app-http.ts';

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );

/** In the error an over-long answer's stream fails with (the SDK may wrap it; the text survives). */
export const TOO_LARGE_MARK = 'answer is larger than';

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

function responseHeaders(raw: IncomingHttpHeaders): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(raw)) {
    if (Array.isArray(v)) for (const x of v) h.append(k, x);
    else if (v !== undefined) h.set(k, v);
  }
  return h;
}

export function guardedFetch(options: {
  allowPrivate: boolean;
  connectTimeoutMs: number;
  /** An answer body longer than this fails its stream with AnswerTooLargeError. */
  maxResponseBytes: number;
  resolver?: Resolver;
}): typeof fetch {
  const lookup = guardedLookup(options.resolver ?? systemResolver, options.allowPrivate);
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError(`unsupported URL ${url.protocol}`);
    // A literal IP never reaches `lookup`: check it here (URL parsing already normalised its forms).
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !options.allowPrivate && addressClass(host) !== 'public')
      throw new BlockedAddressError(`${host} is ${addressClass(host)}`);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => {
      headers[k] = v;
    });
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise<Response>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
        url,
        {
          method: init.method ?? 'GET',
          headers,
          lookup: lookup as never,
          timeout: options.connectTimeoutMs,
          ...(init.signal ? { signal: init.signal } : {}),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const nullBody = NULL_BODY_STATUSES.has(status) || init.method === 'HEAD';
          if (nullBody) res.resume();
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > options.maxResponseBytes)
              res.destroy(new AnswerTooLargeError(options.maxResponseBytes));
          });
          resolve(
            new Response(nullBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
              status,
              statusText: res.statusMessage ?? '',
              headers: responseHeaders(res.headers),
            }),
          );
        },
      );
      // Only the wait for the answer's head is bounded here; an SSE body may stream for long.
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { name: 'TimeoutError' })));
      req.on('response', () => req.setTimeout(0));
      req.on('error', reject);
      req.end(body);
    });
  }) as typeof fetch;
}
