/**
 * The deadline of a turn on the sandbox host's thread, kept by the host's turn watchdog
 * (turn-watchdog.ts, host-turn.ts) instead of isolated-vm's `timeout` option, whose records lived
 * for the run's budget. Real isolated-vm and the real harness, prepared as host.ts prepares them
 * (the isolate adopted by a watchdog); frames go to a recorder. The engine-level attacks on the time
 * limit (limits.test.ts, limits-ending.test.ts) run through real hosts that use it too.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostRun, type Prepared } from './host-run.ts';
import { createEngine } from './index.ts';
import { TurnWatchdog } from './turn-watchdog.ts';
import type { FromHost, ToHost } from './wire.ts';

const HARNESS = readFileSync(new URL('./guest/harness.js', import.meta.url), 'utf8');
const watchdog = new TurnWatchdog();
const isolates: ivm.Isolate[] = [];
afterEach(() => {
  for (const i of isolates.splice(0)) if (!i.isDisposed) i.dispose();
});
// Its thread must be let go, or isolated-vm's exit would wait for it (see turn-watchdog.ts).
afterAll(() => watchdog.close());

/** What isolated-vm was given with each `applySync` into the program. */
const optionsSeen: unknown[] = [];

function prepare(): Prepared {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(isolate);
  const context = isolate.createContextSync();
  const sink: Prepared['sink'] = { run: undefined };
  const g = context.global;
  const log = (l: unknown, t: unknown) => sink.run?.onLog(l, t);
  const call = (i: unknown, b: unknown, a: unknown) => sink.run?.onCall(i, b, a);
  g.setSync('__islet_log', new ivm.Callback(log, { ignored: true }));
  g.setSync('__islet_log_wait', new ivm.Callback(log, { sync: true }));
  g.setSync('__islet_call', new ivm.Callback(call, { ignored: true }));
  g.setSync('__islet_call_wait', new ivm.Callback(call, { sync: true }));
  const done = (k: unknown, a: unknown, b: unknown) => sink.run?.onDone(k, a, b);
  g.setSync('__islet_done', new ivm.Callback(done, { sync: true }));
  g.setSync(
    '__islet_fail',
    new ivm.Callback((m: unknown, d: unknown) => sink.run?.onFail(m, d), { sync: true }),
  );
  context.evalSync(HARNESS);
  const spy = (ref: ivm.Reference): ivm.Reference =>
    new Proxy(ref, {
      get(target, key) {
        if (key === 'applySync')
          return (recv: unknown, args: unknown[], options?: unknown) => {
            optionsSeen.push(options);
            return target.applySync(recv, args as never, options as never);
          };
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const startRef = spy(g.getSync('__islet_start', { reference: true }) as ivm.Reference);
  const deliver = spy(g.getSync('__islet_deliver', { reference: true }) as ivm.Reference);
  return {
    isolate,
    context,
    startRef,
    deliver,
    memoryMb: 64,
    sink,
    watch: { watchdog, gen: watchdog.adopt(isolate) },
  };
}

function start(code: string, budgetMs: number, bindings: string[] = []) {
  const prepared = prepare();
  const frames: FromHost[] = [];
  let finished: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    finished = resolve;
  });
  const msg: Extract<ToHost, { t: 'run' }> = {
    t: 'run',
    code,
    config: { bindings, clockMs: 0, seed: 's' },
    memoryMb: 64,
    outputBytes: 1024 * 1024,
    outputCap: 'shared',
    budgetMs,
  };
  optionsSeen.length = 0;
  const run = new HostRun(msg, prepared, finished, { send: (m) => frames.push(m), flush: () => undefined });
  run.start();
  return { run, frames, ended, prepared };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a turn on the host thread past its deadline', () => {
  it('the first turn that never yields ends as timeout with the budget in the message, isolated-vm given no timeout', async () => {
    const { frames, ended, prepared } = start('console.log("before"); for (;;) {}', 150);
    await ended;
    expect(optionsSeen).toEqual([{}]);
    expect(frames.map((f) => f.t)).toEqual(['logs', 'done']);
    expect(frames[1]).toMatchObject({
      status: 'failed',
      kind: 'timeout',
      message: 'execution deadline reached (150ms)',
    });
    // The CPU the loop spent, read by the watchdog as it stopped it.
    expect((frames[1] as { cpuMs?: number }).cpuMs).toBeGreaterThan(50);
    expect(prepared.isolate.isDisposed).toBe(true);
  });

  it('a loop in a promise job of the first turn (after an await) ends as timeout too', async () => {
    const { frames, ended } = start('await null; await Promise.resolve(); for (;;) {}', 100);
    await ended;
    expect(frames.at(-1)).toMatchObject({ kind: 'timeout', message: 'execution deadline reached (100ms)' });
  });

  it("a loop in the turn after a call's delivery ends at that turn's deadline", async () => {
    const { run, frames, ended } = start('await t(); for (;;) {}', 5000, ['t']);
    expect(frames.map((f) => f.t)).toEqual(['call', 'turn']);
    run.deliverResult({ t: 'result', id: 0, valueJson: '1', turnMs: 120 });
    await ended;
    expect(optionsSeen).toEqual([{}, {}]);
    expect(frames.at(-1)).toMatchObject({ kind: 'timeout', message: 'execution deadline reached (5000ms)' });
  });

  it('a loop that starts as the turn before returned meets its own deadline, not the one before', async () => {
    // The first turn had 5 s and returned at once; the next, begun right after, has 60 ms.
    const { run, frames, ended } = start('await t(); await t(); for (;;) {}', 5000, ['t']);
    run.deliverResult({ t: 'result', id: 0, valueJson: '1', turnMs: 5000 });
    run.deliverResult({ t: 'result', id: 1, valueJson: '1', turnMs: 60 });
    await ended;
    expect(frames.at(-1)).toMatchObject({ kind: 'timeout' });
  });
});

describe('a turn that returns', () => {
  it('is never stopped after it returned, even when it returned right at its deadline', async () => {
    // Turns that end around their 2 ms deadline: each either returned (the run goes on, its
    // isolate alive well past the deadline: no late disposal, which would read as memory) or
    // ended as timeout; nothing else.
    const seen = { returned: 0, timeout: 0 };
    for (let i = 0; i < 120; i++) {
      const spin = (i % 12) * 40_000;
      const { run, frames, ended, prepared } = start(
        `for (let i = 0; i < ${spin}; i++) {} await t(); return 1`,
        2,
        ['t'],
      );
      await sleep(5);
      const done = frames.find((f) => f.t === 'done');
      if (done) {
        expect(done).toMatchObject({ kind: 'timeout', message: 'execution deadline reached (2ms)' });
        seen.timeout++;
        continue;
      }
      expect(prepared.isolate.isDisposed).toBe(false);
      run.deliverResult({ t: 'result', id: 0, valueJson: '1', turnMs: 5000 });
      await ended;
      expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '1' });
      seen.returned++;
    }
    expect(seen.returned).toBeGreaterThan(0);
  });

  it('many turns in a row on one isolate: none stopped, isolated-vm given no timeout', async () => {
    const { run, frames, ended, prepared } = start(
      'let n = 0; for (let i = 0; i < 500; i++) n += await t(); return n',
      60_000,
      ['t'],
    );
    for (let id = 0; id < 500; id++) run.deliverResult({ t: 'result', id, valueJson: '1', turnMs: 60_000 });
    await ended;
    expect(frames.at(-1)).toMatchObject({ t: 'done', status: 'completed', valueJson: '500' });
    expect(optionsSeen).toHaveLength(501);
    expect(optionsSeen.every((o) => JSON.stringify(o) === '{}')).toBe(true);
    expect(prepared.isolate.isDisposed).toBe(true);
  });
});

describe('the watchdog', () => {
  it('an isolate it no longer watches (another adopted since) falls back to isolated-vm’s timeout', async () => {
    const { frames, ended } = (() => {
      const prepared = prepare();
      const other = new ivm.Isolate({ memoryLimit: 8 });
      isolates.push(other);
      watchdog.adopt(other);
      const frames: FromHost[] = [];
      let finished: () => void = () => undefined;
      const ended = new Promise<void>((r) => {
        finished = r;
      });
      optionsSeen.length = 0;
      new HostRun(
        {
          t: 'run',
          code: 'for (;;) {}',
          config: { bindings: [], clockMs: 0, seed: 's' },
          memoryMb: 64,
          outputBytes: 1024,
          outputCap: 'shared',
          budgetMs: 80,
        },
        prepared,
        finished,
        { send: (m) => frames.push(m), flush: () => undefined },
      ).start();
      return { frames, ended };
    })();
    await ended;
    expect(optionsSeen).toEqual([{ timeout: 80 }]);
    expect(frames.at(-1)).toMatchObject({ kind: 'timeout', message: 'execution deadline reached (80ms)' });
  });

  it('lets its thread go at the exit: a process that made one exits (isolated-vm joins its threads)', () => {
    const script = `
      import ivm from 'isolated-vm';
      import { TurnWatchdog } from ${JSON.stringify(new URL('./turn-watchdog.ts', import.meta.url).href)};
      const w = new TurnWatchdog();
      process.on('exit', () => w.close());
      const iso = new ivm.Isolate({ memoryLimit: 8 });
      w.adopt(iso);
      setTimeout(() => process.exit(7), 50);`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 20_000,
      cwd: new URL('..', import.meta.url),
    });
    expect(child.signal).toBeNull();
    expect(child.status).toBe(7);
  });
});

describe('many runs in one real host', () => {
  const engine = createEngine({ maxIdleTotal: 1, maxIdlePerPartition: 1, prewarm: false });
  afterAll(() => engine.close());

  it('after 300 runs (and 20 of 50 calls) a loop still ends as timeout, in the first turn and in a later one', async () => {
    const pids = new Set<number>();
    for (let i = 0; i < 300; i++) {
      const out = await engine.execute('return 1', { partition: 'p' });
      pids.add(out.hostPid!);
    }
    for (let i = 0; i < 20; i++) {
      const out = await engine.execute(
        'return (await Promise.all(Array.from({ length: 50 }, () => t()))).length',
        {
          partition: 'p',
          bindings: ['t'],
          onCall: async () => ({ type: 'result', valueJson: '1' }),
        },
      );
      expect(out.valueJson).toBe('50');
      pids.add(out.hostPid!);
    }
    expect(pids.size).toBe(1);
    const loop = await engine.execute('console.log("x"); for (;;) {}', {
      partition: 'p',
      limits: { timeoutMs: 200 },
    });
    expect(loop.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (200ms)' });
    expect(loop.logs).toEqual([{ level: 'log', text: 'x' }]);
    expect(loop.hostPid).toBe([...pids][0]);
    const after = await engine.execute('await t(); for (;;) {}', {
      partition: 'p',
      bindings: ['t'],
      onCall: async () => ({ type: 'result', valueJson: '1' }),
      limits: { timeoutMs: 200 },
    });
    expect(after.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (200ms)' });
    const next = await engine.execute('return 2', { partition: 'p' });
    expect(next.valueJson).toBe('2');
  }, 60_000);
});
