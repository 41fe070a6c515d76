// A leader change must not reset the scale-down stabilization: the history lives in the
// RunnerPool's status, so the new leader holds replicas for at least the rest of the window (the
// latest persisted run is taken to have lasted until the takeover: longer, never shorter) (fake
// Kubernetes API, real Redis, real BullMQ jobs).
import { describe, expect, it } from 'vitest';
import type { RunnerPool } from '../src/runner-pool.ts';
import type { FakeKubeApi } from './fake-kube-api.ts';
import { onOperatorFixture } from './on-operator-fixture.ts';
import { NS as ns, POOLS, STEADY_LEADER, waitFor } from './operator-fixture.ts';

const MODE = 'read-only';
const WINDOW_S = 6;
/** STEADY_LEADER's lease: the longest a leader may take to act once the window has passed. */
const LEASE_MS = Number(STEADY_LEADER.ISLET_OPERATOR_LEASE_DURATION_MS);

describe('scale-down stabilization across a leader change', () => {
  let api: FakeKubeApi;
  const fx = onOperatorFixture(async (f) => {
    api = f.api;
  });
  const replicas = () => fx.replicasOf('p');
  // Not the 1.5 s test lease: loaded, b stepped down and took over again every second or two, and a
  // takeover whose status write had timed out took the 6 as lasting until then, restarting the window.
  const start = (identity: string) => fx.startOperator(STEADY_LEADER, identity);

  it('the new leader holds replicas for the rest of the window, then scales down', async () => {
    const queue = fx.queue(MODE);
    const a = await start('op-a');
    await waitFor('a leads', () => a.elector.isLeader);
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'run', data: { i } })));
    api.apply(POOLS, ns, {
      apiVersion: 'islet.dev/v1alpha1',
      kind: 'RunnerPool',
      metadata: { name: 'p', namespace: ns },
      spec: {
        mode: MODE,
        minReplicas: 1,
        maxReplicas: 10,
        targetWaitingPerReplica: 2,
        image: 'islet/runner:test',
        scaleDownStabilizationSeconds: WINDOW_S,
      },
    } satisfies RunnerPool);
    await waitFor('6 replicas', () => replicas() === 6);
    const persisted = () => (api.get(POOLS, ns, 'p') as RunnerPool).status?.recommendations ?? [];
    const six = await waitFor('history in status', () => persisted().find((r) => r.replicas === 6));
    // Demand goes away, and the leader with it.
    await queue.obliterate({ force: true });
    const dropAt = Date.now();
    await a.stop();
    const b = await start('op-b');
    await waitFor('b leads', () => b.elector.isLeader);
    // The window runs from the 6's persisted time (rounded up; as it stands now, if written again)
    // or b's takeover, whichever is later.
    const sixAtMs = Date.parse((persisted().find((r) => r.replicas === 6) ?? six).time);
    const windowEndMs = Math.max(sixAtMs, Date.now()) + WINDOW_S * 1000;
    // Until the window has passed since the last high recommendation, replicas hold.
    while (Date.now() < dropAt + (WINDOW_S - 1) * 1000) {
      expect(replicas()).toBe(6);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Then down (history times are rounded up by up to 15 s: never earlier, somewhat later), within
    // a lease of the window's end.
    await waitFor('scaled down', () => replicas() === 1, windowEndMs - Date.now() + LEASE_MS);
  }, 120_000);
});
