/**
 * A busy host keeps its caller's process alive through the engine's one keep-alive (busy-hosts.ts),
 * not through its own handles ref'd and unref'd at every run: real hosts, and a real process whose
 * only work is waiting for its runs.
 */
import { ChildProcess, spawnSync } from 'node:child_process';
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runOn } from '../test/run-helpers.ts';
import { createEngine } from './index.ts';

/** Processes started and exited, counted: a host's first idle unrefs its handles, its stop refs them. */
const events = { started: 0, exited: 0 };
// No host retires on its own during the test (no replacement's start to count).
const engine = createEngine({
  prewarm: false,
  maxRunsPerProcess: 10_000,
  maxHostResidentGrowthBytes: 2 ** 40,
  onProcessEvent: (e) => {
    if (e.type === 'started') events.started++;
    if (e.type === 'exited') events.exited++;
  },
});
afterAll(() => engine.close());
const run = runOn(engine);

describe("a host's handles and the caller's event loop", () => {
  it("a host's process and pipes are not ref'd or unref'd run after run once it first went idle", async () => {
    // The pool's hosts have been idle once.
    for (let i = 0; i < 3; i++) expect((await run('return 1')).status).toBe('completed');
    const spies = [
      vi.spyOn(ChildProcess.prototype, 'ref'),
      vi.spyOn(ChildProcess.prototype, 'unref'),
      vi.spyOn(Socket.prototype, 'ref'),
      vi.spyOn(Socket.prototype, 'unref'),
    ];
    const before = { ...events };
    try {
      for (let i = 0; i < 20; i++) expect((await run(`return ${i}`)).valueJson).toBe(String(i));
      expect(events).toEqual(before);
      // The base made eight such calls a run (each handle ref'd at the acquire, unref'd at the release).
      expect(spies.map((s) => s.mock.calls.length)).toEqual([0, 0, 0, 0]);
    } finally {
      for (const s of spies) s.mockRestore();
    }
  });

  it('a process with nothing else to do waits for each run of an already idle host, and exits once the engine is closed', () => {
    const index = fileURLToPath(new URL('./index.ts', import.meta.url));
    // Runs one after another, with no deadline (its timer would hold the loop too): from the second
    // on, the host's own handles are unref'd, and the engine's keep-alive holds the loop while the
    // run waits for its answer (so does each run's resident guard's timer, run.ts: this pins the
    // guarantee, whichever holds it).
    const script = `
      import { createEngine } from ${JSON.stringify(index)};
      const engine = createEngine({ prewarm: false });
      const out = [];
      for (let i = 0; i < 5; i++) out.push((await engine.execute('return ' + i, { limits: { timeoutMs: null } })).valueJson);
      console.log(out.join(','));
      await engine.close();
    `;
    const child = spawnSync(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(child.stderr).not.toMatch(/unsettled top-level await/i);
    expect(child.stdout.trim()).toBe('0,1,2,3,4');
    expect(child.status).toBe(0);
  });
});
