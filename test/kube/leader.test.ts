/**
 * Leader election on a real API server's Lease, as the chart's ServiceAccount: a clean stop hands
 * over at once (the Lease is released); an API server that hangs for the leader (a proxy that
 * stops forwarding) makes it step down by its renew deadline, never leading at the same time as
 * the other, which takes over once the Lease expires and keeps the pool's scale-down window.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Install, installIslet, waitFor } from './islet-install.ts';

const access = inject('kube');
let islet: Install;

beforeAll(async () => {
  islet = await installIslet(access, 'op-leader', [
    'runners.pools.read-only.enabled=false',
    'runners.pools.workspace-write.enabled=false',
  ]);
});

afterAll(async () => {
  await islet?.stop();
});

const replicasOf = async (pool: string) =>
  (await islet.apps.readNamespacedDeployment({ namespace: islet.namespace, name: `${pool}-runner` })).spec
    ?.replicas;

describe('leader election on a real Lease', () => {
  it('a released Lease is taken over at once; a hung leader steps down before the other leads', async () => {
    const a = await islet.operator({ identity: 'a', viaProxy: true });
    await waitFor('a leads', () => a.op.elector.isLeader);
    const b = await islet.operator({ identity: 'b' });
    await islet.createPool('lead', { maxReplicas: 5, scaleDownStabilizationSeconds: 30 });
    await islet.queue('danger-full-access', 16);
    await waitFor('4 replicas under a', async () => (await replicasOf('lead')) === 4);
    expect(b.op.elector.isLeader).toBe(false);

    // Demand goes: the scale-down window (30 s) holds 4. Then a's API server hangs.
    await islet.drainQueue('danger-full-access');
    await new Promise((r) => setTimeout(r, 1_000));
    let both = 0;
    const sampler = setInterval(() => {
      if (a.op.elector.isLeader && b.op.elector.isLeader) both++;
    }, 5);
    try {
      a.proxy?.hang();
      await waitFor('a steps down', () => !a.op.elector.isLeader, 15_000);
      await waitFor('b leads', () => b.op.elector.isLeader, 20_000);
      expect(both).toBe(0);
      // The new leader honours the window it read from the pool's status: still 4.
      expect(await replicasOf('lead')).toBe(4);
      await waitFor('b scales down after the window', async () => (await replicasOf('lead')) === 1, 60_000);
    } finally {
      clearInterval(sampler);
      a.proxy?.release();
    }
    // a, answered again, stays a follower while b renews.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.op.elector.isLeader).toBe(false);

    // A clean stop releases the Lease (no holder left behind), and a takes it.
    await b.op.stop();
    const leases = await islet.admin
      .makeApiClient(k8s.CoordinationV1Api)
      .listNamespacedLease({ namespace: islet.namespace });
    expect(leases.items.map((l) => l.spec?.holderIdentity)).not.toContain('b');
    await waitFor('a leads again', () => a.op.elector.isLeader, 20_000);
  });
});
