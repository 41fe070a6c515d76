/**
 * A submit's run built from what the gateway's caches hold and have read (run-build.ts `buildRun`:
 * the run policy, the platform settings and the run's connections by `peek`), through inject on
 * real Redis: once they were read, a submit builds its run without reading them again (no promise
 * on its path) and stores the same run the reads would have built; a change to any of them (the
 * policy, the settings, a connection removed) is read at the next submit; an unknown connection is
 * read and refused every time; a refusal of the style is the same problem in hand as read.
 * Round 44 (`submit-peek`).
 */
import { channels } from '@islet/core';
import type { StoredRun } from '@islet/runs';
import { describe, expect, it, vi } from 'vitest';
import { auth, expectProblem, onAppFixture, run } from '../test/app-fixture.ts';

const { gateway, deps } = await onAppFixture();

let sessions = 0;
const submit = (k: string, extra: Record<string, unknown> = {}) =>
  gateway!.app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth(k),
    payload: run({ sessionId: `build-${++sessions}`, ...extra }),
  });

/** The stored run a 202 answered. */
async function stored(res: { statusCode: number; json(): unknown }): Promise<StoredRun> {
  expect(res.statusCode).toBe(202);
  const got = await deps.runs.get((res.json() as { id: string }).id);
  if (!got) throw new Error('no run');
  return got;
}

/**
 * Runs `change` (which drops `kind`'s `key` here and publishes the drop) and waits until the
 * published drop came back to this gateway: its echo would otherwise drop an entry read after the
 * change (under load it can come after the next submit), and that submit's successor would read.
 */
async function changedAndEchoed(kind: string, key: string, change: () => Promise<unknown>) {
  const sub = deps.redis.duplicate();
  try {
    await sub.subscribe(channels.gatewayCache);
    const echoed = new Promise<void>((resolve) =>
      sub.on('message', (_channel: string, message: string) => {
        if (message === `${kind}:${key}`) resolve();
      }),
    );
    await change();
    await echoed;
    // Redis wrote the gateway's subscriber the same message before this one's; a round trip
    // later the gateway's event loop has read it.
    await deps.redis.ping();
  } finally {
    sub.disconnect();
  }
}

/** Counts the async reads `buildRun` makes (policy, settings, a connection, the tenant's list). */
function readSpies() {
  const spies = {
    policy: vi.spyOn(deps.runPolicies, 'effective'),
    settings: vi.spyOn(deps.settings, 'get'),
    connection: vi.spyOn(deps.connections, 'get'),
    list: vi.spyOn(deps.connections, 'list'),
  };
  return {
    counts: () => ({
      policy: spies.policy.mock.calls.length,
      settings: spies.settings.mock.calls.length,
      connection: spies.connection.mock.calls.length,
      list: spies.list.mock.calls.length,
    }),
    restore: () => {
      for (const s of Object.values(spies)) s.mockRestore();
    },
  };
}

async function tenantWithConnection(id: string): Promise<{ key: string; conn: string }> {
  await deps.tenants.createTenant({ id, name: 'Build in hand' });
  const key = (await deps.tenants.createKey(id, ['apps.use'])).key;
  const c = await deps.connections.create(id, {
    name: 'Phone',
    kind: 'client',
    tools: [{ name: 'ask_user', inputSchema: {}, policy: 'allow' }],
    resources: [],
    prompts: [],
  });
  if (!c.ok) throw new Error('connection');
  return { key, conn: c.connection.id };
}

/** What a run's build decided: its policy's rules, limits and Apps. */
const built = (r: StoredRun) => ({
  style: r.request.style,
  approval: r.request.approval,
  timeBudget: r.request.timeBudget,
  limits: r.request.limits,
  connections: r.request.connections,
  bindings: r.request.bindings,
  submittedBy: r.request.submittedBy,
});

describe("a submit's run built from the caches", () => {
  it('once read, the policy, settings and connections are not read again, and the run is the same', async () => {
    const { key, conn } = await tenantWithConnection('build-hand');
    const reads = readSpies();
    try {
      for (const extra of [{ connections: [conn] }, {}]) {
        const first = await stored(await submit(key, extra));
        const after = reads.counts();
        // A new tenant's policy and connections: read the async way once.
        expect(after.policy).toBeGreaterThanOrEqual(1);
        expect(after.connection + after.list).toBeGreaterThanOrEqual(1);
        const second = await stored(await submit(key, extra));
        const third = await stored(await submit(key, extra));
        // Neither read again: built from the caches' `peek` (no promise).
        expect(reads.counts()).toEqual(after);
        expect(built(second)).toEqual(built(first));
        expect(built(third)).toEqual(built(first));
        expect(first.request.bindings.map((b) => b.connectionId)).toEqual([conn]);
        expect(first.request.connections).toEqual([conn]);
      }
    } finally {
      reads.restore();
    }
  });

  it('a changed policy, changed settings and a removed connection are read at the next submit', async () => {
    const { key, conn } = await tenantWithConnection('build-change');
    const reads = readSpies();
    try {
      await stored(await submit(key, { connections: [conn] }));
      const warm = await stored(await submit(key, { connections: [conn] }));
      expect(warm.request.approval).toBe('hold');
      const before = reads.counts();
      await deps.runPolicies.set('build-change', { style: 'run_code', approval: 'stop' });
      const changed = await stored(await submit(key, { connections: [conn] }));
      expect(changed.request.approval).toBe('stop');
      expect(reads.counts().policy).toBe(before.policy + 1);

      const settings = await deps.settings.get();
      const res = await deps.settings.update(settings.version, { enabled: settings.codeMode.enabled });
      expect(res.ok).toBe(true);
      const mid = reads.counts();
      await stored(await submit(key, { connections: [conn] }));
      expect(reads.counts().settings).toBe(mid.settings + 1);

      expect(await deps.connections.remove('build-change', conn)).toBe(true);
      const gone = await submit(key, { connections: [conn] });
      expect(expectProblem(gone, 400, 'validation').detail).toBe(`unknown connection: ${conn}`);
    } finally {
      reads.restore();
    }
  });

  it('an unknown connection is read and refused every time (a miss is not kept)', async () => {
    const { key } = await tenantWithConnection('build-unknown');
    await stored(await submit(key));
    const reads = readSpies();
    try {
      for (let i = 1; i <= 2; i++) {
        const res = await submit(key, { connections: ['conn-nothere'] });
        expect(expectProblem(res, 400, 'validation').detail).toBe('unknown connection: conn-nothere');
        expect(reads.counts().connection).toBe(i);
      }
    } finally {
      reads.restore();
    }
  });

  it("a style's refusal is the same problem in hand as read", async () => {
    const { key } = await tenantWithConnection('build-refuse');
    await changedAndEchoed('run-policy', 'build-refuse', () =>
      deps.runPolicies.set('build-refuse', { style: 'code-mode' }),
    );
    const reads = readSpies();
    try {
      // No Apps (a refusal read the async way reads no connection: the whole list would not be peeked).
      const first = await submit(key, { timeoutMs: 1000, connections: [] });
      const policyReads = reads.counts().policy;
      const second = await submit(key, { timeoutMs: 1000, connections: [] });
      // The second built from the caches: its policy not read again.
      expect(reads.counts().policy).toBe(policyReads);
      for (const res of [first, second])
        expect(expectProblem(res, 400, 'validation').detail).toContain('timeoutMs belongs to run_code runs');
      expect(second.json()).toEqual(first.json());
    } finally {
      reads.restore();
    }
    expect(await deps.runs.inFlightCount('build-refuse')).toBe(0);
  });
});
