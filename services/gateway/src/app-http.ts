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
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { addressClass } from './address-policy.ts';

export { addressClass, isNonPublicAddress } from './address-policy.ts';

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

export function postToApp(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean; maxResponseBytes: number; resolver?: Resolver },
): Promise<AppResponse> {
  const max = options.maxResponseBytes;
  return new Promise((resolve, reject) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch (err) {
      return reject(err);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      return reject(new BlockedAddressError(`${u.protocol} is not http(s)`));
    // WHATWG URL parsing already turned 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1.
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !options.allowPrivate && addressClass(host) !== 'public')
      return reject(new BlockedAddressError(`${host} is ${addressClass(host)}`));
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: guardedLookup(options.resolver ?? systemResolver, options.allowPrivate) as never,
        timeout: options.timeoutMs,
        signal: AbortSignal.timeout(options.timeoutMs),
      },
      (res) => {
        const declared = Number(res.headers['content-length']);
        // Settle first: destroying the request also errors the response, with a vaguer reason.
        const tooLarge = () => {
          reject(new AnswerTooLargeError(max));
          req.destroy();
        };
        if (Number.isFinite(declared) && declared > max) return tooLarge();
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > max) return tooLarge();
          chunks.push(c);
        });
        res.on('end', () => {
          if (size <= max)
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { name: 'TimeoutError' })));
    req.on('error', reject);
    req.end(body);
  });
}
