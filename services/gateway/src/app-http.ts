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
import { BoundedMap } from '@islet/core';
import { Agent, type Dispatcher } from 'undici';
import { addressClass } from './address-policy.ts';
import { type H1Target, h1Post, requestBytes } from './app-h1.ts';
import { AnswerTooLargeError, AppTimeoutError, BlockedAddressError } from './app-http-errors.ts';

export { addressClass } from './address-policy.ts';

export { AnswerTooLargeError, AppTimeoutError, BlockedAddressError } from './app-http-errors.ts';

type DispatchController = Dispatcher.DispatchController;
type DispatchHandler = Dispatcher.DispatchHandler;

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
 * One set of connections per way of resolving and checking, so a pooled connection opened under one
 * set of rules never serves a request made under another: an undici Agent for `https` and the key
 * of `app-h1.ts`'s kept connections for `http`, both connecting through the same `lookup`.
 */
interface Rules {
  lookup: ReturnType<typeof guardedLookup>;
  agent: Agent | undefined;
  /** Prefix of the `http` connections' pool key (the origin follows). */
  id: string;
}
const rulesBy = new WeakMap<Resolver, Map<boolean, Rules>>();
let rulesMade = 0;

function rulesFor(resolver: Resolver, allowPrivate: boolean): Rules {
  let byRule = rulesBy.get(resolver);
  if (!byRule) {
    byRule = new Map();
    rulesBy.set(resolver, byRule);
  }
  let rules = byRule.get(allowPrivate);
  if (!rules) {
    rules = { lookup: guardedLookup(resolver, allowPrivate), agent: undefined, id: `${++rulesMade} ` };
    byRule.set(allowPrivate, rules);
  }
  return rules;
}

function agentFor(rules: Rules): Agent {
  // Connections per App are not capped (as node:http's agent): the runner bounds the calls in flight.
  rules.agent ??= new Agent({ connect: { lookup: rules.lookup as never } });
  return rules.agent;
}

/**
 * What `postToApp` reads from an App's URL: where to dispatch and, for a literal IP host, its
 * address class (`addressClass`). Each is a pure function of the URL's text, so it is worked out
 * once per URL (`appTarget`), not once per call. Nothing here depends on DNS or on the rules a call
 * is made under: `allowPrivate` is applied at every call, and a host name is still resolved and
 * checked in the socket's `lookup` whenever undici opens a connection (`guardedLookup`).
 */
interface AppTarget {
  origin: string;
  path: string;
  /** Refused for every call whatever the rules (not http(s)): the refusal's text. */
  badProtocol?: string;
  /** The host is a literal IP: its `addressClass` (`'public'` or the range that refuses it). */
  literalClass?: string;
  host: string;
  /** An `http:` URL: where `app-h1.ts` connects and what it sends as Host. */
  h1?: H1Target;
}

/** The last URLs' targets: an App's URL changes only with an edit of its connection. */
const targets = new BoundedMap<string, AppTarget>(1024);

/** `url`'s target, parsed once; a URL that does not parse throws (and is not kept). */
export function appTarget(url: string): AppTarget {
  const known = targets.get(url);
  if (known) return known;
  const u = new URL(url);
  // WHATWG URL parsing already turned 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1.
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const target: AppTarget = { origin: u.origin, path: `${u.pathname}${u.search}`, host };
  if (u.protocol !== 'http:' && u.protocol !== 'https:') target.badProtocol = `${u.protocol} is not http(s)`;
  if (isIP(host)) target.literalClass = addressClass(host);
  if (u.protocol === 'http:')
    target.h1 = { host, port: Number(u.port || 80), hostHeader: u.host, path: target.path };
  targets.set(url, target);
  return target;
}

export function postToApp(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean; maxResponseBytes: number; resolver?: Resolver },
): Promise<AppResponse> {
  const max = options.maxResponseBytes;
  let target: AppTarget;
  try {
    target = appTarget(url);
  } catch (err) {
    return Promise.reject(err);
  }
  if (target.badProtocol !== undefined) return Promise.reject(new BlockedAddressError(target.badProtocol));
  // A literal IP never reaches the socket's `lookup`: its class is checked here, every call.
  const literal = target.literalClass;
  if (literal !== undefined && !options.allowPrivate && literal !== 'public')
    return Promise.reject(new BlockedAddressError(`${target.host} is ${literal}`));
  const rules = rulesFor(options.resolver ?? systemResolver, options.allowPrivate);
  if (target.h1) {
    // Plain http: the gateway's own HTTP/1.1 client (app-h1.ts), same lookup, deadline and cap.
    let request: string | Buffer;
    try {
      request = requestBytes(target.h1, headers, body);
    } catch (err) {
      return Promise.reject(err);
    }
    return h1Post(
      target.h1,
      rules.id + target.origin,
      request,
      rules.lookup as never,
      options.timeoutMs,
      max,
    );
  }
  return new Promise((resolve, reject) => {
    // undici's dispatch with a handler of our own, not `request`: no body stream, no AbortSignal
    // with its listener, no promise of undici's per call, about a third of the client's CPU per call
    // (a hundred parallel calls are a hundred of these on the gateway's one thread; README round 27).
    let settled = false;
    let controller: DispatchController | undefined;
    /** Settles first, then drops the connection (aborting an unfinished answer closes its socket). */
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      reject(err);
      controller?.abort(err);
    };
    // The whole call's deadline; the two idle timeouts only end a stalled one sooner. A call still
    // waiting for a connection at the deadline fails then, and is dropped once it gets one.
    const deadline = setTimeout(
      () => fail(new AppTimeoutError(options.timeoutMs)),
      options.timeoutMs,
    ).unref();
    const chunks: Buffer[] = [];
    let size = 0;
    let status = 0;
    const handler: DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (settled) c.abort(new AppTimeoutError(options.timeoutMs));
      },
      onResponseStart(_c, statusCode, headers) {
        status = statusCode;
        const declared = Number(headers['content-length']);
        if (Number.isFinite(declared) && declared > max) fail(new AnswerTooLargeError(max));
      },
      onResponseData(_c, chunk) {
        if (settled) return;
        size += chunk.length;
        if (size > max) return fail(new AnswerTooLargeError(max));
        chunks.push(chunk);
      },
      onResponseEnd() {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ status, text: Buffer.concat(chunks).toString('utf8') });
      },
      onResponseError(_c, err) {
        fail(err);
      },
    };
    try {
      agentFor(rules).dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers,
          body,
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
        },
        handler,
      );
    } catch (err) {
      fail(err as Error);
    }
  });
}
