/**
 * When a sandbox host makes its next isolate: at once after a run when the engine needs it (runs
 * follow back to back, other hosts are busy), else only when the engine asks (`prepare`, a ready
 * isolate was taken) or after an idle spell. Seen through the host's own `madeOnPath` (a run that
 * waited for its isolate's build) and the engine's counts; never by time. Every run still gets a
 * fresh isolate, whichever way it was made.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { HostProcess } from './host-process.ts';
import { createEngine } from './index.ts';
import type { Engine, EngineOptions } from './types.ts';
import type { FromHost, ToHost } from './wire.ts';

const engines: Engine[] = [];
const hosts: HostProcess[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await Promise.all(hosts.map((h) => h.stop()));
});

/** No idle timer fires within a test: every build below is asked for or made at once. */
const NEVER_MS = 600_000;

function newEngine(options: EngineOptions = {}): Engine {
  const engine = createEngine({ prewarm: false, idlePrepareMs: NEVER_MS, ...options });
  engines.push(engine);
  return engine;
}

/** Counts a fresh isolate's globals: any run in a used isolate would return more than 1. */
const FRESH = 'globalThis.seen = (globalThis.seen ?? 0) + 1; return seen;';

function runFrame(nextIsolateAfterMs?: number): ToHost {
  return {
    t: 'run',
    code: FRESH,
    config: { bindings: [], clockMs: 0, seed: 's' },
    memoryMb: 64,
    outputBytes: 1024,
    outputCap: 'shared',
    ...(nextIsolateAfterMs !== undefined ? { nextIsolateAfterMs } : {}),
  };
}

async function startHost(): Promise<HostProcess> {
  const host = await HostProcess.start({ partition: 'p', startupTimeoutMs: 15_000 });
  hosts.push(host);
  return host;
}

/** Sends frames in one go and waits for the run's `done`. */
function runOn(host: HostProcess, ...frames: ToHost[]): Promise<Extract<FromHost, { t: 'done' }>> {
  return new Promise((resolve, reject) => {
    host.attach({
      onMessage(m) {
        if (m.t === 'done') resolve(m);
      },
      onProtocolError: (r) => reject(new Error(r)),
      onExit: (i) => reject(new Error(`exited: ${i.stderr}`)),
    });
    for (const f of frames) host.send(f);
  });
}

/** A run that waits in a call until released: its host stays busy meanwhile. */
function holdOne(engine: Engine) {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let called: () => void = () => undefined;
  const inCall = new Promise<void>((resolve) => {
    called = resolve;
  });
  const done = engine.execute('await apps.hold.on({}); return 1;', {
    bindings: ['hold.on'],
    onCall: async () => {
      called();
      await held;
      return { type: 'result', valueJson: 'null' };
    },
  });
  return { inCall, release, done };
}

describe('the host makes its next isolate when the engine needs it', () => {
  it('after a run sent with nextIsolateAfterMs, the next run waits for its isolate unless `prepare` came first', async () => {
    const host = await startHost();
    // Its first isolate is made after `ready`; the first run finds it (or makes it, at start-up).
    const first = await runOn(host, runFrame(NEVER_MS));
    expect(first).toMatchObject({ status: 'completed', valueJson: '1' });
    // Deferred and never asked: the run's isolate is made when its frame comes.
    const waited = await runOn(host, runFrame(NEVER_MS));
    expect(waited).toMatchObject({ status: 'completed', valueJson: '1', madeOnPath: true });
    // Asked (the frame just before the run's): made ahead, in the turn that read `prepare`.
    const asked = await runOn(host, { t: 'prepare' }, runFrame());
    expect(asked).toMatchObject({ status: 'completed', valueJson: '1' });
    expect(asked.madeOnPath).toBeUndefined();
    // Sent without it: made at once after `done`, before the next frame is read.
    const atOnce = await runOn(host, runFrame());
    expect(atOnce).toMatchObject({ status: 'completed', valueJson: '1' });
    expect(atOnce.madeOnPath).toBeUndefined();
    // A second `prepare` while one isolate is ready makes none more, and the run still gets a fresh one.
    const twice = await runOn(host, { t: 'prepare' }, { t: 'prepare' }, runFrame());
    expect(twice).toMatchObject({ status: 'completed', valueJson: '1' });
    expect(twice.madeOnPath).toBeUndefined();
  });

  it('with one run and an idle pool, the freed host builds only when its partition runs short of ready isolates', async () => {
    const engine = newEngine({ maxIdlePerPartition: 2 });
    // Two hosts, each taken with the other busy (one run held in a call), so each makes its next at once.
    const held = holdOne(engine);
    await held.inCall;
    const second = await engine.execute(FRESH);
    expect(second.valueJson).toBe('1');
    held.release();
    expect((await held.done).valueJson).toBe('1');
    const base = engine.stats!().isolates!;
    expect(base.deferred).toBe(0);

    // One run, the other host idle with its isolate ready: this host's next isolate waits.
    const a = await engine.execute(FRESH);
    expect(a.valueJson).toBe('1');
    let counts = engine.stats!().isolates!;
    expect(counts.deferred - base.deferred).toBe(1);
    expect(counts.asked - base.asked).toBe(0);

    // The next run takes the other host (the ready isolate): the first is asked to prepare.
    const b = await engine.execute(FRESH);
    expect(b.valueJson).toBe('1');
    expect(b.hostPid).not.toBe(a.hostPid);
    counts = engine.stats!().isolates!;
    expect(counts.asked - base.asked).toBe(1);
    expect(counts.deferred - base.deferred).toBe(2);

    // And the first host, asked, had it ready: no run so far waited for a build.
    const c = await engine.execute(FRESH);
    expect(c.valueJson).toBe('1');
    expect(c.hostPid).toBe(a.hostPid);
    counts = engine.stats!().isolates!;
    expect(counts.madeOnPath - base.madeOnPath).toBe(0);
    expect(counts.asked - base.asked).toBe(2);
  });

  it('with another run in flight on the partition, a freed host builds at once', async () => {
    const engine = newEngine({ maxIdlePerPartition: 3 });
    await Promise.all([engine.execute(FRESH), engine.execute(FRESH), engine.execute(FRESH)]);
    const base = engine.stats!().isolates!;
    // A run held in a call keeps one host busy while the others serve runs one at a time.
    const held = holdOne(engine);
    await held.inCall;
    // Each run is taken with the held run in flight: its partition wants two ready isolates (one for
    // the next run, one behind the held run) and its one other idle host holds one, so the host
    // taken makes its next at once.
    for (let i = 0; i < 4; i++) expect((await engine.execute(FRESH)).valueJson).toBe('1');
    const counts = engine.stats!().isolates!;
    expect(counts.deferred - base.deferred).toBe(0);
    expect(counts.madeOnPath - base.madeOnPath).toBe(0);
    held.release();
    expect((await held.done).valueJson).toBe('1');
  });

  it('by default (idlePrepareMs 0) every build is at once, as before', async () => {
    const engine = createEngine({ prewarm: false, maxIdlePerPartition: 2 });
    engines.push(engine);
    await Promise.all([engine.execute(FRESH), engine.execute(FRESH)]);
    for (let i = 0; i < 4; i++) expect((await engine.execute(FRESH)).valueJson).toBe('1');
    expect(engine.stats!().isolates).toMatchObject({ deferred: 0, asked: 0 });
  });
});
