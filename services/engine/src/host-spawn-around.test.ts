/**
 * `aroundHostSpawn` (the runner's ISLET_RUNNER_HOST_SLICE_US, kernel-sandbox host-slice.ts) runs each
 * host's spawn inside it, once a host, so what the calling thread holds during it (scheduler
 * attributes) is what the host inherits; the host it returned serves the run.
 */
import { describe, expect, it } from 'vitest';
import { createEngine, type ProcessEvent } from './index.ts';

describe('aroundHostSpawn', () => {
  it('wraps every host start’s spawn, and the spawned host serves the run', async () => {
    const inside: number[] = [];
    const events: ProcessEvent[] = [];
    const engine = createEngine({
      prewarm: false,
      onProcessEvent: (e) => events.push(e),
      aroundHostSpawn: (spawn) => {
        const child = spawn() as { pid?: number };
        inside.push(child.pid ?? -1);
        return child as never;
      },
    });
    try {
      const out = await engine.execute('return 6 * 7;');
      expect(out.failure).toBeUndefined();
      expect(out.valueJson).toBe('42');
      expect(inside).toContain(out.hostPid);
      const started = events.filter((e) => e.type === 'started').map((e) => e.pid);
      expect(started.length).toBeGreaterThan(0);
      expect(inside).toEqual(started);
    } finally {
      await engine.close();
    }
  });
});
