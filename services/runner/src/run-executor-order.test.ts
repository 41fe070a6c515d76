/**
 * What the executor does around a run's two writes: the program to its sandbox host and the end
 * to Redis. Its metrics (the queue wait, the run's duration) are observed once the turn of the
 * event loop that made each write is over, not before it. Read as an order of calls (a fake
 * engine, the real run store and journal on a real redis-server), never from time.
 */
import { channels, createMetrics, keys } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { type Engine, RunCancel } from '@islet/engine';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { onRedisServer } from '../../runs/test/test-redis.ts';
import {
  callOnceEngine,
  completed,
  type ExecutorStores,
  endsTold,
  executorOf,
  journalingExecutor,
  limits,
  signal,
  stores,
} from '../test/executor-fakes.ts';
import type { GatewayClient } from './gateway-client.ts';
import type { createRunExecutor } from './run-executor.ts';
import { RunJob } from './run-job.ts';

// Live logs made, counted around the real one (every case here goes through it).
const liveLogs = vi.hoisted(() => ({ made: 0 }));
vi.mock('./live-log.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('./live-log.ts')>();
  return {
    createLiveLog: (...args: Parameters<typeof real.createLiveLog>) => {
      liveLogs.made++;
      return real.createLiveLog(...args);
    },
  };
});

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

/** Stores run `id` (its `code`; a `notes.read` binding with `calls`) and executes it. */
async function executeRun(
  executor: ReturnType<typeof createRunExecutor>,
  { runs }: ExecutorStores,
  id: string,
  opts: { code?: string; calls?: boolean; pushEnd?: boolean } = {},
) {
  const code = opts.code ?? 'return 1';
  const request = {
    connections: [] as string[],
    bindings: (opts.calls ? [{ binding: 'notes.read' }] : []) as never[],
    limits,
  };
  await runs.create(
    opts.pushEnd ? runFixture(id, { code, pushEnd: true, request }) : runFixture(id, { code, request }),
  );
  return executor.execute({
    runId: id,
    mode: 'read-only',
    enqueuedAtMs: Date.now(),
    cancel: signal,
    handBack: signal,
  });
}

describe('the executor around its writes', () => {
  it('observes the queue wait after the program is sent and the duration after the end is handed over', async () => {
    const store = stores(redis);
    const { runs } = store;
    const order: string[] = [];
    const finish = runs.finish.bind(runs);
    runs.finish = (...args) => {
      order.push('end');
      return finish(...args);
    };
    const metrics = createMetrics({ component: 'run-executor-order', defaults: false });
    for (const name of ['queueWait', 'runDuration'] as const) {
      const histogram = metrics[name];
      const observe = histogram.observe.bind(histogram) as (...args: unknown[]) => void;
      histogram.observe = ((...args: unknown[]) => {
        order.push(name);
        observe(...args);
      }) as typeof histogram.observe;
    }
    const engine = {
      execute: async () => {
        order.push('program');
        return completed();
      },
    } as unknown as Engine;
    const executor = executorOf('run-executor-order', engine, store, { metrics });
    expect(await executeRun(executor, store, 'ro-1')).toBe('completed');
    await new Promise((r) => setImmediate(r));
    expect(await redis.hget(keys.run('ro-1'), 'status')).toBe('Completed');
    expect(order.filter((o) => o === 'queueWait')).toHaveLength(1);
    expect(order.filter((o) => o === 'runDuration')).toHaveLength(1);
    expect(order.indexOf('queueWait')).toBeGreaterThan(order.indexOf('program'));
    expect(order.indexOf('runDuration')).toBeGreaterThan(order.indexOf('end'));
  });
});

describe('what the executor tells the end about its calls', () => {
  it('an attempt that sent no call says so; one that sent a call does not, and its waiter gets the call', async () => {
    // The program calls its binding once when asked to (`code` 'call'); the gateway's part, the
    // claim that journals the call, done here as the gateway does it.
    const { store, executor } = journalingExecutor('run-executor-calls', redis);
    const { journal } = store;
    const told = endsTold(store, (end) => end.sentNoCall);
    const sub = redis.duplicate();
    const pushed: string[] = [];
    sub.on('message', (_c: string, m: string) => pushed.push(m));
    await sub.subscribe(channels.runEvents);
    try {
      for (const [id, code] of [
        ['nc-1', 'none'],
        ['nc-2', 'call'],
      ] as const)
        expect(await executeRun(executor, store, id, { code, calls: true, pushEnd: true })).toBe('completed');
      expect(told.get('nc-1')).toBe(true);
      expect(told.get('nc-2')).toBe(false);
      for (let i = 0; i < 100 && pushed.filter((m) => / end2 /.test(m)).length < 2; i++)
        await new Promise((r) => setTimeout(r, 10));
      const journalOf = (id: string) => {
        const m = pushed.find((p) => p.startsWith(`${id} end2 `));
        if (!m) throw new Error(`no end pushed for ${id}`);
        return journal.callsOf(
          fieldsOf((JSON.parse(m.slice(`${id} end2 `.length)) as [string[], string[]])[1]),
        );
      };
      expect(journalOf('nc-1')).toEqual([]);
      expect(journalOf('nc-2').map((c) => c.index)).toEqual([0]);
    } finally {
      sub.disconnect();
    }
  });
});

describe("what serves a run's calls", () => {
  it('is made at the first call: a run that makes none starts no stall timer, one that does starts one and stops it', async () => {
    const store = stores(redis);
    const { journal } = store;
    const engine = {
      execute: async (code: string, opts: Parameters<Engine['execute']>[1]) => {
        const calls = [];
        if (code === 'call') {
          const call = { index: 0, binding: 'notes.read', argsJson: '{}' };
          expect(await opts?.onCall?.(call, undefined as never)).toEqual({ type: 'result', valueJson: '1' });
          calls.push(call);
        }
        // The execution ends with its call still unanswered (as at a deadline).
        if (code === 'held') {
          const call = { index: 0, binding: 'notes.read', argsJson: '{}' };
          void opts?.onCall?.(call, undefined as never);
          await reached;
          calls.push(call);
        }
        return completed({ calls });
      },
    } as unknown as Engine;
    // The signal each call's request was sent with (closed when the run is over with a call
    // unanswered); a `held` run's call is answered only once its request is closed.
    const callSignals: AbortSignal[] = [];
    let reachedGateway: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => {
      reachedGateway = resolve;
    });
    const gateway = {
      call: async (
        runId: string,
        attempt: number,
        call: { index: number; binding: string; argsJson: string },
        callSignal: AbortSignal,
      ) => {
        callSignals.push(callSignal);
        expect(callSignal.aborted).toBe(false);
        await journal.claim(runId, attempt, call);
        if (runId === 'cs-3') {
          reachedGateway();
          await new Promise((resolve) => callSignal.addEventListener('abort', resolve, { once: true }));
        }
        return { outcome: { type: 'result', valueJson: '1' } };
      },
    } as unknown as GatewayClient;
    const executor = executorOf('run-executor-side', engine, store, { gateway });
    // The replaying handler's stall timer (runs' replaying-handler.ts) is the one interval an
    // execution starts: counted, with the ones stopped, while each execution runs.
    const run = async (id: string, code: string) => {
      const started: unknown[] = [];
      const stopped: unknown[] = [];
      const setI = globalThis.setInterval;
      const clearI = globalThis.clearInterval;
      globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
        const t = setI(...args);
        started.push(t);
        return t;
      }) as typeof setInterval;
      globalThis.clearInterval = ((t: Parameters<typeof clearInterval>[0]) => {
        stopped.push(t);
        clearI(t);
      }) as typeof clearInterval;
      try {
        const result = await executeRun(executor, store, id, { code, calls: true });
        return { result, started, stopped };
      } finally {
        globalThis.setInterval = setI;
        globalThis.clearInterval = clearI;
      }
    };
    const none = await run('cs-1', 'none');
    expect(none.result).toBe('completed');
    expect(none.started).toHaveLength(0);
    const one = await run('cs-2', 'call');
    expect(one.result).toBe('completed');
    expect(one.started).toHaveLength(1);
    // Stopped when the execution ended (the executor's `finally`), as before.
    expect(one.stopped).toEqual(one.started);
    // Its call answered, its request is left to end by itself: an abort would close a batch
    // still open for its end, and its kept-alive socket with it.
    expect(callSignals).toHaveLength(1);
    expect(callSignals[0]?.aborted).toBe(false);
    // A call unanswered when the execution is over: its request is closed, with the AbortError a
    // plain abort() gives, made once, frozen, without stack frames (a plain abort() builds one
    // and captures a stack).
    const held = await run('cs-3', 'held');
    expect(held.result).toBe('completed');
    expect(callSignals).toHaveLength(2);
    expect(callSignals[1]?.aborted).toBe(true);
    const reason = callSignals[1]?.reason as DOMException;
    expect([reason.name, reason.message, reason.stack]).toEqual([
      'AbortError',
      'This operation was aborted',
      'AbortError: This operation was aborted',
    ]);
    expect(Object.isFrozen(reason)).toBe(true);
  });
});

describe("a run's live log", () => {
  it('is made at the first lines printed: a run that prints nothing makes none', async () => {
    const store = stores(redis);
    const engine = {
      execute: async (code: string, opts: Parameters<Engine['execute']>[1]) => {
        const logs = code === 'print' ? [{ level: 'log' as const, text: 'hi' }] : [];
        if (logs.length > 0) opts?.onLog?.(logs);
        return completed({ logs });
      },
    } as unknown as Engine;
    const executor = executorOf('run-executor-live-log', engine, store, {
      liveLog: { maxBytes: 1024 * 1024, flushMs: 10 },
    });
    const made: number[] = [];
    for (const [id, code] of [
      ['ll-1', 'quiet'],
      ['ll-2', 'print'],
    ] as const) {
      const before = liveLogs.made;
      expect(await executeRun(executor, store, id, { code })).toBe('completed');
      made.push(liveLogs.made - before);
    }
    expect(made).toEqual([0, 1]);
    expect(await redis.hget(keys.run('ll-1'), 'status')).toBe('Completed');
    expect(await redis.hget(keys.run('ll-2'), 'status')).toBe('Completed');
  });
});

describe("a run's metrics", () => {
  it('are recorded into their series, prom-client called once a series, not once a run; the scrape counts every run', async () => {
    const store = stores(redis);
    const metrics = createMetrics({ component: 'run-executor-metrics', defaults: false });
    const spies = [
      vi.spyOn(metrics.queueWait, 'observe'),
      vi.spyOn(metrics.runDuration, 'observe'),
      vi.spyOn(metrics.runsTotal, 'inc'),
      vi.spyOn(metrics.tenantRuns, 'inc'),
      vi.spyOn(metrics.tenantRunSeconds, 'inc'),
      vi.spyOn(metrics.tenantOutputBytes, 'inc'),
      vi.spyOn(metrics.tenantSandboxCpuSeconds, 'inc'),
    ];
    const engine = { execute: async () => completed({ cpuMs: 2 }) } as unknown as Engine;
    const executor = executorOf('run-executor-metrics', engine, store, { metrics });
    for (const id of ['rm-1', 'rm-2', 'rm-3']) {
      expect(await executeRun(executor, store, id)).toBe('completed');
      await new Promise((r) => setImmediate(r));
    }
    // Each series' first value went through prom-client (it makes the series); the next two runs'
    // were added to it directly (before: every value, prom-client's label checks and key each time).
    for (const spy of spies) expect(spy).toHaveBeenCalledTimes(1);
    const scrape = (await metrics.registry.metrics()).split('\n');
    // A series' line by its name and labels (a histogram's list the component first).
    const line = (name: string, ...labels: string[]) =>
      scrape.find((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)));
    expect(line('islet_runs_total', 'status="Completed"', 'kind="none"', 'mode="read-only"')).toMatch(/ 3$/);
    expect(line('islet_queue_wait_seconds_count', 'mode="read-only"')).toMatch(/ 3$/);
    expect(
      line('islet_run_duration_seconds_count', 'mode="read-only"', 'status="Completed"', 'kind="none"'),
    ).toMatch(/ 3$/);
    expect(line('islet_tenant_runs_total', 'tenant="other"', 'status="Completed"')).toMatch(/ 3$/);
    expect(line('islet_tenant_sandbox_cpu_seconds_total', 'tenant="other"')).toMatch(/ 0\.006$/);
  });
});

describe('what the executor hands the engine to end a run', () => {
  it("the runner's handle when given (no signal, so no EventTarget listener a run), else the stop signal", async () => {
    const store = stores(redis);
    const given: { cancel: unknown; signal: unknown }[] = [];
    const engine = {
      execute: async (_code: string, opts: Parameters<Engine['execute']>[1]) => {
        given.push({ cancel: opts?.cancel, signal: opts?.signal });
        return completed();
      },
    } as unknown as Engine;
    const executor = executorOf('run-executor-cancel', engine, store);
    const stop = new AbortController().signal;
    const stopEngine = new RunCancel();
    for (const [id, handle] of [
      ['ce-1', stopEngine],
      ['ce-2', undefined],
    ] as const) {
      await store.runs.create(
        runFixture(id, { code: 'return 1', request: { connections: [], bindings: [], limits } }),
      );
      const job = {
        runId: id,
        mode: 'read-only' as const,
        enqueuedAtMs: Date.now(),
        cancel: signal,
        handBack: signal,
        stop,
      };
      expect(await executor.execute(handle ? { ...job, stopEngine: handle } : job)).toBe('completed');
    }
    expect(given).toEqual([
      { cancel: stopEngine, signal: undefined },
      { cancel: undefined, signal: stop },
    ]);
  });
});

describe("the runner's job: its signals made only when asked for", () => {
  it('a run that makes no call makes no AbortController; a call makes its stop signal, which a cancel then aborts', async () => {
    const store = stores(redis);
    const { journal } = store;
    const engine = callOnceEngine();
    const callSignals: AbortSignal[] = [];
    const gateway = {
      call: async (runId: string, attempt: number, call: { index: number }, callSignal: AbortSignal) => {
        callSignals.push(callSignal);
        await journal.claim(runId, attempt, call as never);
        return { outcome: { type: 'result', valueJson: '1' } };
      },
    } as unknown as GatewayClient;
    const executor = executorOf('run-executor-lazy', engine, store, { gateway });
    const RealController = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends RealController {
      constructor() {
        super();
        made++;
      }
    };
    try {
      const runJob = async (id: string, code: string) => {
        await store.runs.create(
          runFixture(id, {
            code,
            request: { connections: [], bindings: [{ binding: 'notes.read' }] as never[], limits },
          }),
        );
        made = 0;
        const job = new RunJob(id, 'read-only', Date.now(), Date.now(), undefined, undefined);
        const result = await executor.execute(job);
        return { job, result, made };
      };
      const none = await runJob('lz-1', 'none');
      expect(none.result).toBe('completed');
      expect(none.made).toBe(0);
      const one = await runJob('lz-2', 'call');
      expect(one.result).toBe('completed');
      // The job's `stop` and the calls' own controller (closed only with a call unanswered).
      expect(one.made).toBe(2);
      expect(callSignals).toHaveLength(1);
      expect(callSignals[0]?.aborted).toBe(false);
      // The call's signal hangs on the job's `stop`: a cancel aborts it.
      one.job.abort('cancel');
      expect(callSignals[0]?.aborted).toBe(true);
      expect(callSignals[0]?.reason).toBe(one.job.stop.reason);
    } finally {
      globalThis.AbortController = RealController;
    }
  });
});
