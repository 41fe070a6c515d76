/**
 * When a sandbox host makes its next isolate, as the engine orders it (engine.ts `holdsNext`,
 * NextIsolate `afterRun` with `hold`): with another host of the partition ready, a host's run frame
 * says `holdNext`, and the host is told `prepare` only once the next run's program has gone to
 * another host; with none ready beside it at its release, it is told then. Read from the frames the
 * engine writes to its hosts, in order, on real hosts (which must take `prepare` and stay).
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { HostProcess } from './host-process.ts';
import { createEngine } from './index.ts';
import type { BindingOutcome } from './types.ts';
import type { ToHost } from './wire.ts';

const engine = createEngine({ maxIdlePerPartition: 4 });
afterAll(() => engine.close());
afterEach(() => vi.restoreAllMocks());

/** Every `run` and `prepare` frame sent, in order: `run <pid> [hold]`, `prepare <pid>`. */
function recordFrames(): string[] {
  const frames: string[] = [];
  const send = HostProcess.prototype.send;
  vi.spyOn(HostProcess.prototype, 'send').mockImplementation(function (
    this: HostProcess,
    m: ToHost,
    g?: boolean,
  ) {
    if (m.t === 'run') frames.push(`run ${this.pid}${m.holdNext ? ' hold' : ''}`);
    if (m.t === 'prepare') frames.push(`prepare ${this.pid}`);
    return send.call(this, m, g);
  });
  return frames;
}

const idleFor = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a host's next isolate is made while another host runs the next program", () => {
  it('sequential runs alternate two hosts; each holds its make until the next run went to the other', async () => {
    const partition = 'held-seq';
    // Two hosts of the partition; one more run leaves one of them holding its make, the other ready.
    await Promise.all([engine.execute('1', { partition }), engine.execute('2', { partition })]);
    await idleFor(20);
    const settled = (await engine.execute('1', { partition })).hostPid;
    await idleFor(20);
    const frames = recordFrames();
    const pids: number[] = [];
    for (let i = 0; i < 6; i++) {
      const out = await engine.execute('return 1 + 1', { partition });
      expect(out.status).toBe('completed');
      pids.push(out.hostPid!);
      // Past the back-to-back gap (engine.ts BACK_TO_BACK_MS) and the base's 1 ms delay (NextIsolate).
      await idleFor(10);
    }
    const [a, b] = pids;
    expect(b).toBe(settled);
    expect(a).not.toBe(b);
    // On 6b60376a the same host took every run (the one idle the shortest), with no frame but `run`.
    expect(pids).toEqual([a, b, a, b, a, b]);
    // Each run's program goes first, then the host that ran the run before is told to make its isolate.
    expect(frames).toEqual(pids.flatMap((pid, i) => [`run ${pid} hold`, `prepare ${i % 2 === 0 ? b : a}`]));
  });

  it('a held host whose ready neighbour was taken meanwhile is told at its own release', async () => {
    const partition = 'held-busy';
    await Promise.all([engine.execute('1', { partition }), engine.execute('2', { partition })]);
    await idleFor(20);
    // One host holding its make (b), the other ready (a).
    const settled = (await engine.execute('1', { partition })).hostPid;
    await idleFor(20);
    const frames = recordFrames();
    const gates: (() => void)[] = [];
    const waiting = (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => (gates.length >= n ? resolve() : setTimeout(check, 2));
        check();
      });
    const opts = {
      partition,
      bindings: ['gate.wait'],
      onCall: () =>
        new Promise<BindingOutcome>((resolve) =>
          gates.push(() => resolve({ type: 'result', valueJson: '1' })),
        ),
    };
    // The first run holds its make (b, making, counts as ready) and waits on a call.
    const first = engine.execute('return await apps.gate.wait()', opts);
    await waiting(1);
    // The second takes b; the first's host is busy, so it holds nothing.
    const second = engine.execute('return await apps.gate.wait()', opts);
    await waiting(2);
    gates[0]!();
    const out1 = await first;
    // Released with no host ready beside it (the other one runs): told at once.
    gates[1]!();
    const out2 = await second;
    expect([out1.status, out2.status]).toEqual(['completed', 'completed']);
    const [a, b] = [out1.hostPid, out2.hostPid];
    expect(b).toBe(settled);
    // The first run holds a's make and tells b; the second takes b (now making) with a busy, so holds
    // nothing; a, released with no host ready beside it (b runs), is told at once.
    expect(frames).toEqual([`run ${a} hold`, `prepare ${b}`, `run ${b}`, `prepare ${a}`]);
  });
});
