/**
 * One anonymous client must not lock every tenant out. Behind an ingress (or a NAT) every tenant
 * shares the client address a prober uses: failed authentications count only requests whose key
 * does not resolve, and a key that resolves is never refused for its address's failures. The unit
 * counted is one client: an IPv4 address, an IPv6 /64 (a host rotating addresses inside its /64 is
 * one client), an IPv4-mapped IPv6 address as its IPv4. Real Redis, the real app through inject.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type GatewaysUnderTest, startGateways } from '../test/gateway-harness.ts';
import { clientAddressBucket } from './client-address.ts';

const LIMIT = 4;
let gateways: GatewaysUnderTest | undefined;
let direct: FastifyInstance;
let behindIngress: FastifyInstance;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  gateways = await startGateways({
    env: {
      ISLET_INTERNAL_TOKEN: 'internal-token-for-lockout-tests',
      ISLET_AUTH_FAILURES_PER_MINUTE: String(LIMIT),
    },
  });
  const first = await gateways.add();
  direct = first.app;
  // The chart's setting with the Ingress on: the controller is one trusted hop.
  behindIngress = (await gateways.add({ env: { ISLET_TRUST_PROXY_HOPS: '1' } })).app;
  await first.deps.tenants.createTenant({ id: 'ta', name: 'A' });
  await first.deps.tenants.createTenant({ id: 'tb', name: 'B' });
  keyA = (await first.deps.tenants.createKey('ta', ['apps.use'])).key;
  keyB = (await first.deps.tenants.createKey('tb', ['apps.use'])).key;
});

afterAll(() => gateways?.close());

beforeEach(async () => {
  // A fixed one-minute window: do not straddle its end.
  if (Date.now() % 60_000 > 45_000)
    await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
});

const get = (app: FastifyInstance, remoteAddress: string, key: string, forwardedFor?: string) =>
  app.inject({
    method: 'GET',
    url: '/v1/connections',
    remoteAddress,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
    },
  });

async function exhaust(
  app: FastifyInstance,
  remoteAddress: string | ((i: number) => string),
  forwardedFor?: string,
) {
  for (let i = 0; i < LIMIT; i++) {
    const from = typeof remoteAddress === 'string' ? remoteAddress : remoteAddress(i);
    expect((await get(app, from, `bad-key-${i}`, forwardedFor)).statusCode).toBe(401);
  }
}

describe('failed authentication never locks out a valid key', () => {
  it('a prober exhausting a shared address (ingress, NAT): every tenant with a valid key still gets in', async () => {
    const shared = '10.0.0.10';
    await exhaust(direct, shared);
    const refused = await get(direct, shared, 'bad-key-more');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().detail).toContain('too many failed authentications from this address');
    // Many more failures keep being refused, never reaching the valid keys.
    for (let i = 0; i < 3 * LIMIT; i++) expect((await get(direct, shared, `bad-${i}`)).statusCode).toBe(429);
    expect((await get(direct, shared, '')).statusCode).toBe(429);
    for (const key of [keyA, keyB]) {
      const res = await get(direct, shared, key);
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('requests with a valid key are not counted as failures', async () => {
    const addr = '10.0.0.11';
    for (let i = 0; i < 3 * LIMIT; i++) expect((await get(direct, addr, keyA)).statusCode).toBe(200);
    // The address has its whole allowance of failures left.
    for (let i = 0; i < LIMIT; i++) expect((await get(direct, addr, `bad-${i}`)).statusCode).toBe(401);
    expect((await get(direct, addr, 'bad-last')).statusCode).toBe(429);
  });

  it('behind the ingress (one trusted hop) the limit is per client, not per controller', async () => {
    const controller = '10.0.0.2';
    await exhaust(behindIngress, controller, '198.51.100.20');
    expect((await get(behindIngress, controller, 'bad-x', '198.51.100.20')).statusCode).toBe(429);
    // Another client through the same controller: its failures are its own.
    expect((await get(behindIngress, controller, 'bad-y', '198.51.100.21')).statusCode).toBe(401);
    expect((await get(behindIngress, controller, keyB, '198.51.100.20')).statusCode).toBe(200);
    // A forged header before the controller's does not move the prober (only one hop is trusted).
    expect((await get(behindIngress, controller, 'bad-z', '203.0.113.9, 198.51.100.20')).statusCode).toBe(
      429,
    );
  });

  it('IPv6: a host rotating addresses inside its /64 is one client; another /64 is not affected', async () => {
    await exhaust(direct, (i) => `2001:db8:1:2::${(i + 1).toString(16)}`);
    expect((await get(direct, '2001:db8:1:2:ffff:1:2:3', 'bad-rotated')).statusCode).toBe(429);
    expect((await get(direct, '2001:db8:1:3::1', 'bad-other-64')).statusCode).toBe(401);
    expect((await get(direct, '2001:db8:1:2::77', keyA)).statusCode).toBe(200);
  });

  it('an IPv4-mapped IPv6 peer is its IPv4 address', async () => {
    await exhaust(direct, '::ffff:192.0.2.44');
    expect((await get(direct, '192.0.2.44', 'bad-v4')).statusCode).toBe(429);
  });
});

describe('clientAddressBucket', () => {
  it('IPv4 as is, IPv6 as its /64 in one spelling, mapped IPv4 as IPv4', () => {
    expect(clientAddressBucket('192.0.2.1')).toBe('192.0.2.1');
    expect(clientAddressBucket('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientAddressBucket('2001:DB8:0:0:1::9')).toBe('2001:db8:0:0::/64');
    expect(clientAddressBucket('2001:db8::1')).toBe(clientAddressBucket('2001:db8:0:0:ffff::2'));
    expect(clientAddressBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
