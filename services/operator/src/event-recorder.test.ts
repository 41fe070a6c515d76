import { describe, expect, it, vi } from 'vitest';
import { AGGREGATE_MAX_DISTINCT, EventRecorder } from './event-recorder.ts';
import type { RunnerPool } from './runner-pool.ts';

const pool: RunnerPool = {
  apiVersion: 'islet.dev/v1alpha1',
  kind: 'RunnerPool',
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: {},
};

function recorder() {
  const created: { name: string; message: string; count: number }[] = [];
  const patched: { name: string; count: number; message: string }[] = [];
  let failPatch = false;
  const r = new EventRecorder({
    kube: {
      async createEvent(_ns, e) {
        created.push({ name: e.metadata.name ?? '', message: e.message ?? '', count: e.count ?? 0 });
      },
      async patchEventCount(_ns, name, u) {
        if (failPatch) throw Object.assign(new Error('gone'), { code: 404 });
        patched.push({ name, count: u.count, message: u.message });
      },
    },
    namespace: 'ns',
    identity: 'op',
    now: () => 1_000,
    warn: () => {},
  });
  return { r, created, patched, failPatchOnce: () => (failPatch = true) };
}

describe('EventRecorder (client-go’s correlator)', () => {
  it('a repeat raises the count of the Event already written', async () => {
    const { r, created, patched } = recorder();
    for (let i = 0; i < 3; i++)
      await r.record(pool, { type: 'Warning', reason: 'ReconcileFailed', message: 'Invalid: x' });
    expect(created).toHaveLength(1);
    expect(patched.map((p) => p.count)).toEqual([2, 3]);
    expect(patched.every((p) => p.name === created[0]?.name)).toBe(true);
  });

  it('more distinct messages than the limit collapse into one combined Event', async () => {
    const { r, created, patched } = recorder();
    for (let i = 0; i < AGGREGATE_MAX_DISTINCT + 3; i++) {
      await r.record(pool, { type: 'Warning', reason: 'ReconcileFailed', message: `m${i}` });
    }
    expect(created).toHaveLength(AGGREGATE_MAX_DISTINCT + 1);
    expect(created.at(-1)?.message).toBe(`(combined from similar events): m${AGGREGATE_MAX_DISTINCT}`);
    expect(patched.map((p) => p.message)).toEqual([
      `(combined from similar events): m${AGGREGATE_MAX_DISTINCT + 1}`,
      `(combined from similar events): m${AGGREGATE_MAX_DISTINCT + 2}`,
    ]);
  });

  it('remembers the Events it wrote, bounded, without walking its memory a write', async () => {
    const { r, created, patched } = recorder();
    // Past its bound, forgetting the oldest Event one write at a time walked the deleted entries
    // at the Map's front on every write (round 29 gw-cpu): no iteration of the memory now.
    const keys = vi.spyOn(Map.prototype, 'keys');
    try {
      for (let i = 0; i < 6000; i++) await r.record(pool, { type: 'Normal', reason: `R${i}`, message: 'm' });
      expect(keys).not.toHaveBeenCalled();
    } finally {
      keys.mockRestore();
    }
    expect(created).toHaveLength(6000);
    // The latest is remembered: its repeat is a count raised, not another Event.
    await r.record(pool, { type: 'Normal', reason: 'R5999', message: 'm' });
    expect(created).toHaveLength(6000);
    expect(patched.map((p) => p.count)).toEqual([2]);
    // Forgetting a pool still finds its Events in both generations.
    r.forget('u1');
    await r.record(pool, { type: 'Normal', reason: 'R5999', message: 'm' });
    expect(created).toHaveLength(6001);
  });

  it('writes a new Event when the old one is gone', async () => {
    const { r, created, failPatchOnce } = recorder();
    await r.record(pool, { type: 'Normal', reason: 'ScaledUp', message: 'replicas 1 → 2' });
    failPatchOnce();
    await r.record(pool, { type: 'Normal', reason: 'ScaledUp', message: 'replicas 1 → 2' });
    expect(created).toHaveLength(2);
  });
});
