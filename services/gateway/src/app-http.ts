/**
 * The gateway's HTTP client for `http` connections. It resolves the App's host itself and refuses
 * non-public addresses (loopback, RFC 1918, link-local / cloud metadata, CGNAT, ULA, multicast…)
 * unless ISLET_APP_ALLOW_PRIVATE_NETWORKS is on. The check sits in the socket's `lookup`, so the
 * address checked is the address connected to (no DNS-rebinding window).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';

export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
}

function v4(addr: string): number[] {
  return addr.split('.').map(Number);
}

/** True for addresses a tenant's App must not be: anything but public unicast. */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) {
    const [a = 0, b = 0] = v4(address);
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 192 && b === 0) ||
      (a === 198 && (b === 18 || b === 19)) ||
      a >= 224
    );
  }
  if (family === 6) {
    const lower = address.toLowerCase();
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
    if (mapped) return isNonPublicAddress(mapped[1]!);
    return (
      lower === '::' ||
      lower === '::1' ||
      lower.startsWith('fc') ||
      lower.startsWith('fd') ||
      lower.startsWith('fe8') ||
      lower.startsWith('fe9') ||
      lower.startsWith('fea') ||
      lower.startsWith('feb') ||
      lower.startsWith('ff') ||
      lower.startsWith('64:ff9b:') ||
      lower.startsWith('2001:db8')
    );
  }
  return true;
}

export interface AppResponse {
  status: number;
  text: string;
}

export function postToApp(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean; maxResponseBytes?: number },
): Promise<AppResponse> {
  const u = new URL(url);
  const max = options.maxResponseBytes ?? 67_108_864;
  const guardedLookup = (
    hostname: string,
    opts: { all?: boolean },
    cb: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) return cb(err, '', 0);
      const allowed = options.allowPrivate
        ? addresses
        : addresses.filter((a) => !isNonPublicAddress(a.address));
      if (allowed.length === 0)
        return cb(
          new BlockedAddressError(
            `${hostname} resolves to a non-public address; Apps must be on public addresses`,
          ),
          '',
          0,
        );
      if (opts.all) return cb(null, allowed);
      cb(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
  return new Promise((resolve, reject) => {
    // A literal IP never goes through lookup: check it here.
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !options.allowPrivate && isNonPublicAddress(host))
      return reject(
        new BlockedAddressError(`${host} is a non-public address; Apps must be on public addresses`),
      );
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: guardedLookup as never,
        timeout: options.timeoutMs,
        signal: AbortSignal.timeout(options.timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > max) {
            req.destroy(new Error(`the App's answer is larger than ${max} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { name: 'TimeoutError' })));
    req.on('error', reject);
    req.end(body);
  });
}
