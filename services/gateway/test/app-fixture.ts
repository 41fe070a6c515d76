/**
 * What the gateway app's inject tests (src/app-*.test.ts) share: a gateway app on a redis-server of
 * its own (64 KiB body limit) with tenants `acme` (a key with apps.use and sessions.read, one with
 * platform.admin), `other` and `limited` (3 requests a minute), the run_code body they submit and
 * the check of a problem answer. A test file starts one at its top (`onAppFixture`, awaited there)
 * and closes its `gateway` in `afterAll`; a start that fails half-way stops what it started.
 */
import { afterAll, expect } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp, type TestGatewayDeps } from './gateway-harness.ts';

export interface AppFixture {
  gateway: GatewayAppUnderTest;
  app: GatewayAppUnderTest['app'];
  deps: TestGatewayDeps;
  key: string;
  otherKey: string;
  adminKey: string;
  limitedKey: string;
}

export async function startAppFixture(): Promise<AppFixture> {
  const gateway = await startGatewayApp({ env: { ISLET_BODY_LIMIT_BYTES: '65536' } });
  const { app, deps } = gateway;
  try {
    await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
    await deps.tenants.createTenant({ id: 'other', name: 'Other' });
    await deps.tenants.createTenant({ id: 'limited', name: 'Limited', rateLimitPerMinute: 3 });
    const limitedKey = (await deps.tenants.createKey('limited', ['apps.use'])).key;
    const key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
    const otherKey = (await deps.tenants.createKey('other', ['apps.use'])).key;
    const adminKey = (await deps.tenants.createKey('acme', ['platform.admin'])).key;
    return { gateway, app, deps, key, otherKey, adminKey, limitedKey };
  } catch (err) {
    await gateway.close();
    throw err;
  }
}

/**
 * A test file's fixture: `startAppFixture()` awaited at the file's top (`const { app, key } = await
 * onAppFixture();`, so the file keeps its own names, read inside its tests, with no `let`s filled by
 * a hook), its gateway closed in the file's `afterAll`.
 */
export async function onAppFixture(): Promise<AppFixture> {
  const fx = await startAppFixture();
  afterAll(() => fx.gateway.close());
  return fx;
}

/**
 * `startGatewayApp(options)` for a whole test file, awaited at its top (`const { app, deps } = await
 * onGatewayApp({ env })`): the app up before the file's tests run, closed in the file's `afterAll`
 * (after the file's own `afterAll` hooks: vitest runs them last registered first).
 */
export async function onGatewayApp(
  options?: Parameters<typeof startGatewayApp>[0],
): Promise<GatewayAppUnderTest> {
  const gateway = await startGatewayApp(options);
  afterAll(() => gateway.close());
  return gateway;
}

export const auth = (k: string) => ({ authorization: `Bearer ${k}` });
export const run = (extra: Record<string, unknown> = {}) => ({
  code: 'return 1',
  description: 'Return the number one',
  sessionId: 's1',
  turnId: 't1',
  callId: 'c1',
  ...extra,
});

export function expectProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
  code: string,
) {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  const body = res.json() as { type: string; status: number; title: string };
  expect(body.type).toBe(`https://islet.dev/problems/${code}`);
  expect(body.status).toBe(status);
  expect(body.title).toBeTruthy();
  return body as { detail?: string; type: string };
}
