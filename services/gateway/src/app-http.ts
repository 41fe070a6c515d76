/**
 * The gateway's HTTP client for `http` connections. It resolves the App's host itself and refuses
 * non-public addresses (see `address-policy.ts`) unless ISLET_APP_ALLOW_PRIVATE_NETWORKS is on. The
 * check sits in the socket's `lookup`, so the address checked is the address connected to (no
 * DNS-rebinding window); a literal IP never reaches `lookup` and is checked before the request.
 * A name that resolves to any non-public address is refused as a whole, so a mixed answer cannot
 * let the connection fall back to the internal one. Redirects are not followed (a 3xx is a failed
 * call). The answer is read up to `maxResponseBytes` and the connection dropped past it.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { addressClass } from './address-policy.ts';

export { addressClass } from './address-policy.ts';

/** The target is not a public address. The message is for the server log, never for the program. */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
}

export class AnswerTooLargeError extends Error {
  override name = 'AnswerTooLargeError';
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the App's answer is larger than ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

export interface AppResponse {
  status: number;
  text: string;
}

/** Name resolution (every address of the name); injectable so tests can play a rebinding DNS. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `net` lookup that resolves once per connection attempt and hands the socket only addresses it
 * has checked: there is no second resolution between the check and the connect.
 */
export function guardedLookup(resolver: Resolver, allowPrivate: boolean) {
  return (hostname: string, opts: { all?: boolean }, cb: LookupCallback) => {
    resolver(hostname).then(
      (addresses) => {
        const blocked = allowPrivate ? [] : addresses.filter((a) => addressClass(a.address) !== 'public');
        if (addresses.length === 0 || blocked.length > 0) {
          const list = blocked.map((a) => `${a.address} (${addressClass(a.address)})`).join(', ');
          return cb(new BlockedAddressError(`${hostname} resolves to ${list || 'nothing'}`), '', 0);
        }
        if (opts.all) return cb(null, addresses);
        const first = addresses[0] as LookupAddress;
        cb(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => cb(err, '', 0),
    );
  };
}

/**
 * One undici Agent per way of resolving and checking, so a pooled connection opened under one set
 * of rules never serves a request made under another. undici, not node:http: less client CPU
 * per request and a faster 100-call run in the call bench (test/bench/README.md).
 */
const agents = new WeakMap<Resolver, Map<boolean, Agent>>();

function agentFor(resolver: Resolver, allowPrivate: boolean): Agent {
  let byRule = agents.get(resolver);
  if (!byRule) {
    byRule = new Map();
    agents.set(resolver, byRule);
  }
  let agent = byRule.get(allowPrivate);
  if (!agent) {
    // Connections per App are not capped (as node:http's agent): the runner bounds the calls in flight.
    agent = new Agent({ connect: { lookup: guardedLookup(resolver, allowPrivate) as never } });
    byRule.set(allowPrivate, agent);
  }
  return agent;
}

export function postToApp(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean; maxResponseBytes: number; resolver?: Resolver },
): Promise<AppResponse> {
  const max = options.maxResponseBytes;
  let u: URL;
  try {
    u = new URL(url);
  } catch (err) {
    return Promise.reject(err);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return Promise.reject(new BlockedAddressError(`${u.protocol} is not http(s)`));
  // WHATWG URL parsing already turned 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1.
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !options.allowPrivate && addressClass(host) !== 'public')
    return Promise.reject(new BlockedAddressError(`${host} is ${addressClass(host)}`));
  return new Promise((resolve, reject) => {
    request(u, {
      dispatcher: agentFor(options.resolver ?? systemResolver, options.allowPrivate),
      method: 'POST',
      headers,
      body,
      // The whole call's deadline; the two idle timeouts only end a stalled one sooner.
      signal: AbortSignal.timeout(options.timeoutMs),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    }).then((res) => {
      const answer = res.body;
      // Settle first, then drop the connection (destroying an unfinished answer closes its socket).
      const tooLarge = () => {
        reject(new AnswerTooLargeError(max));
        answer.destroy();
      };
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > max) return tooLarge();
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on('data', (c: Buffer) => {
        size += c.length;
        if (size > max) return tooLarge();
        chunks.push(c);
      });
      answer.on('end', () => {
        if (size <= max) resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') });
      });
      answer.on('error', reject);
    }, reject);
  });
}
