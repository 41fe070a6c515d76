/**
 * The engine through `execute` on real sandbox hosts: the program as an async function's body, binding
 * calls and their failures, binding names refused before a run starts, idle hosts bounded across
 * tenants. What the isolate sees (values crossing, console, the environment): engine-isolate.test.ts;
 * the limits: limits.test.ts, limits-ending.test.ts. Shared helpers: test/run-helpers.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { echo, runOn } from '../test/run-helpers.ts';
import { createEngine, renderResultText, validateBindingNames } from './index.ts';
import type { BindingCall, BindingOutcome } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());
const run = runOn(engine);

describe('the program is the body of an async function', () => {
  it('top-level await and return work; the returned value comes back as JSON text', async () => {
    const out = await run('const x = await Promise.resolve(20); return { sum: x + 22 };');
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('{"sum":42}');
    expect(out.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('a program that returns nothing has no value', async () => {
    const out = await run('const x = 1;');
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBeUndefined();
    expect(renderResultText(out)).toBe('(run_code completed with no output)');
  });

  it('a program that does not parse fails as an exception and does not run', async () => {
    const out = await run('console.log("ran"); return (;');
    expect(out.status).toBe('failed');
    expect(out.failure?.kind).toBe('exception');
    expect(out.failure?.message).toMatch(/^SyntaxError: /);
    expect(out.logs).toEqual([]);
  });

  it('the program cannot break out of its function body into the harness', async () => {
    const out = await run('}); globalThis.escaped = true; (async function() {');
    expect(out.failure?.kind).toBe('exception');
    expect(out.failure?.message).toMatch(/SyntaxError/);
  });

  it('an uncaught error is an exception with its name and message', async () => {
    const out = await run('console.log("before"); throw new TypeError("boom");');
    expect(out.failure).toMatchObject({ kind: 'exception', message: 'TypeError: boom', line: 1 });
    expect(renderResultText(out)).toBe(
      'code run failed (exception): TypeError: boom\n\nCaptured output:\nbefore',
    );
  });

  it('thrown strings and plain data are rendered; a value that cannot be is `program threw an unrenderable value`', async () => {
    expect((await run('throw "plain words"')).failure?.message).toBe('plain words');
    expect((await run('throw { code: 7 }')).failure?.message).toBe('{"code":7}');
    expect((await run('throw [1, 2]')).failure?.message).toBe('[1,2]');
    expect((await run('throw Symbol("s")')).failure).toEqual({
      kind: 'exception',
      message: 'program threw an unrenderable value',
    });
    const trap = await run(
      'throw new Proxy({}, { has() { throw 1 }, get() { throw 1 }, getPrototypeOf() { throw 1 } })',
    );
    expect(trap.failure).toEqual({ kind: 'exception', message: 'program threw an unrenderable value' });
  });
});

describe('bindings', () => {
  it('apps.<connection>.<capability>, apps.call and flat tools reach one callback, in call order', async () => {
    const seen: BindingCall[] = [];
    const out = await run(
      `const [today, tomorrow] = await Promise.all([
         apps.work_calendar.list_events({ day: "2026-10-23" }),
         apps.call("work_calendar.list_events", { day: "2026-10-24" }),
       ]);
       const hit = await search("q");
       const none = await search();
       return [today.index, tomorrow.args.day, hit.args, none.args];`,
      {
        bindings: ['work_calendar.list_events', 'search'],
        onCall: async (call) => {
          seen.push(call);
          return echo(call);
        },
      },
    );
    expect(out.status).toBe('completed');
    expect(JSON.parse(out.valueJson!)).toEqual([0, '2026-10-24', 'q', null]);
    expect(seen).toEqual([
      { index: 0, binding: 'work_calendar.list_events', argsJson: '{"day":"2026-10-23"}' },
      { index: 1, binding: 'work_calendar.list_events', argsJson: '{"day":"2026-10-24"}' },
      { index: 2, binding: 'search', argsJson: '"q"' },
      { index: 3, binding: 'search', argsJson: 'null' },
    ]);
    expect(out.calls.map((c) => [c.index, c.binding, c.outcome?.type])).toEqual([
      [0, 'work_calendar.list_events', 'result'],
      [1, 'work_calendar.list_events', 'result'],
      [2, 'search', 'result'],
      [3, 'search', 'result'],
    ]);
  });

  it('calls made in one turn (a Promise.all) reach onCall together, in order', async () => {
    // A tick counter that moves between event-loop turns of this process: calls the host wrote
    // one frame at a time would arrive in several reads, and so in several turns here.
    let tick = 0;
    const ticking = setInterval(() => tick++, 0);
    const seen: [number, number][] = [];
    try {
      const out = await run(
        'const r = await Promise.all(Array.from({ length: 50 }, (_, i) => apps.bench.ping({ i }))); return r.length;',
        {
          bindings: ['bench.ping'],
          onCall: async (c) => {
            seen.push([c.index, tick]);
            return echo(c);
          },
        },
      );
      expect(out.valueJson).toBe('50');
    } finally {
      clearInterval(ticking);
    }
    expect(seen.map(([index]) => index)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(new Set(seen.map(([, t]) => t)).size).toBe(1);
  });

  it("a call made before a long computation goes out while it runs on isolated-vm's thread; on the host's (the first turn, a later one with a deadline), when that turn returns", async () => {
    // Programs that never end by themselves: what ends them says whether the call went out.
    const seen: number[] = [];
    const stopAt =
      (index: number) =>
      async (c: BindingCall): Promise<BindingOutcome> => {
        seen.push(c.index);
        return c.index === index
          ? { type: 'stop', code: 'suspended', message: 'the call went out' }
          : echo(c);
      };
    // Without a deadline a later turn runs on isolated-vm's thread, not the host's: the call leaves
    // while the loop spins, and only its stop can end the run.
    const later = await run(
      `await apps.bench.ping({}); apps.bench.ping({}).catch(() => undefined); for (;;) {}`,
      {
        bindings: ['bench.ping'],
        onCall: stopAt(1),
        limits: { timeoutMs: null },
      },
    );
    expect(later.failure).toBeUndefined();
    expect(later.status).toBe('stopped');
    expect(later.stop).toEqual({ code: 'suspended', message: 'the call went out', atCall: 1 });
    expect(seen).toEqual([0, 1]);
    // The first turn runs on the host's thread, which sends its calls when the turn returns: one
    // that never returns never sends it, and the abort (which ends such a turn by ending its host)
    // ends the run instead of the call's stop. A call that arrives after the run ended is dropped.
    seen.length = 0;
    const ac = new AbortController();
    const aborting = setTimeout(() => ac.abort('checked'), 500);
    const spun = await run(`apps.bench.ping({}).catch(() => undefined); for (;;) {}`, {
      bindings: ['bench.ping'],
      onCall: stopAt(0),
      limits: { timeoutMs: null },
      signal: ac.signal,
    });
    clearTimeout(aborting);
    expect(spun.failure).toEqual({ kind: 'abort', message: 'the run was aborted: checked' });
    expect(seen).toEqual([]);
    // With a deadline, a later turn runs on the host's thread as the first does (no thread hop a
    // call): its calls too go out when it returns, so one that never returns never sends them.
    seen.length = 0;
    const ac2 = new AbortController();
    const spunLater = await run(
      `await apps.bench.ping({}); apps.bench.ping({}).catch(() => undefined); for (;;) {}`,
      {
        bindings: ['bench.ping'],
        onCall: async (c) => {
          seen.push(c.index);
          if (c.index === 0) setTimeout(() => ac2.abort('checked'), 300);
          return echo(c);
        },
        limits: { timeoutMs: 60_000 },
        signal: ac2.signal,
      },
    );
    expect(spunLater.failure).toEqual({ kind: 'abort', message: 'the run was aborted: checked' });
    expect(seen).toEqual([0]);
  });

  it("the run's end aborts its handlers' signal only with an outcome still to come, with one AbortError made once", async () => {
    // Every call answered: each outcome was used, so nothing is aborted (an abort a calling run,
    // before). A call held past the deadline: its handler's signal is aborted, with the AbortError
    // a plain abort() gives, but the same frozen one every run and without stack frames (a plain
    // abort() builds one and captures a stack).
    const answered: AbortSignal[] = [];
    const out = await run('await apps.bench.ping({}); await apps.bench.ping({}); return 1;', {
      bindings: ['bench.ping'],
      onCall: async (c, { signal }) => {
        answered.push(signal);
        return echo(c);
      },
    });
    expect(out.status).toBe('completed');
    expect(answered).toHaveLength(2);
    expect(answered[1]).toBe(answered[0]);
    expect(answered[0]?.aborted).toBe(false);

    const held: AbortSignal[] = [];
    for (let i = 0; i < 2; i++) {
      const late = await run('await apps.bench.ping({}); return 1;', {
        bindings: ['bench.ping'],
        limits: { timeoutMs: 300 },
        onCall: (_c, { signal }) => {
          held.push(signal);
          return new Promise<BindingOutcome>((resolve) =>
            signal.addEventListener('abort', () => resolve({ type: 'result', valueJson: '1' }), {
              once: true,
            }),
          );
        },
      });
      expect(late.failure?.kind).toBe('timeout');
    }
    expect(held).toHaveLength(2);
    expect(held[1]).not.toBe(held[0]);
    expect(held.every((s) => s.aborted)).toBe(true);
    const reason = held[0]?.reason as DOMException;
    expect(reason).toBeInstanceOf(DOMException);
    expect([reason.name, reason.message, reason.code]).toEqual([
      'AbortError',
      'This operation was aborted',
      20,
    ]);
    expect(reason.stack).toBe('AbortError: This operation was aborted');
    expect(Object.isFrozen(reason)).toBe(true);
    expect(held[1]?.reason).toBe(reason);
  });

  it('a binding the program was not given never reaches the callback', async () => {
    const seen: BindingCall[] = [];
    const out = await run(
      `let msg; try { await apps.call("other.secret", {}) } catch (e) { msg = e.message }
       return [msg, "other" in apps, typeof secret];`,
      {
        bindings: ['notes.read'],
        onCall: async (c) => {
          seen.push(c);
          return echo(c);
        },
      },
    );
    expect(JSON.parse(out.valueJson!)).toEqual([
      "unknown binding: other.secret; this run's bindings: notes.read",
      false,
      'undefined',
    ]);
    expect(seen).toEqual([]);
  });

  it('binding failures are catchable Errors named AppCallDenied, AppCallFailed (details.reason), AppInputRequired (details.operationId)', async () => {
    const outcomes: BindingOutcome[] = [
      { type: 'error', name: 'AppCallDenied', message: 'A decider did not allow the call.' },
      {
        type: 'error',
        name: 'AppCallFailed',
        message: 'The App call failed.',
        details: { reason: 'timeout' },
      },
      { type: 'error', name: 'AppInputRequired', message: 'More input.', details: { operationId: 'op-1' } },
    ];
    const out = await run(
      `const seen = [];
       for (const i of [0, 1, 2]) {
         try { await apps.mail.send({ i }) } catch (e) {
           seen.push({ name: e.name, message: e.message, details: e.details, isError: e instanceof Error,
             stack: String(e.stack) });
         }
       }
       return seen;`,
      { bindings: ['mail.send'], onCall: async (c) => outcomes[c.index]! },
    );
    expect(out.status).toBe('completed');
    const seen = JSON.parse(out.valueJson!) as Record<string, unknown>[];
    expect(seen.map((s) => [s.name, s.message, s.details, s.isError])).toEqual([
      ['AppCallDenied', 'A decider did not allow the call.', {}, true],
      ['AppCallFailed', 'The App call failed.', { reason: 'timeout' }, true],
      ['AppInputRequired', 'More input.', { operationId: 'op-1' }, true],
    ]);
    // No host stack or path reaches the program.
    for (const s of seen) {
      expect(s.stack).not.toMatch(/\/work\/|node_modules|node:|\.ts:|host/);
    }
  });

  it('an uncaught App error fails the run as an exception with its name', async () => {
    const out = await run('await apps.mail.send({})', {
      bindings: ['mail.send'],
      onCall: async () => ({ type: 'error', name: 'AppCallDenied', message: 'not allowed' }),
    });
    expect(out.failure).toEqual({ kind: 'exception', message: 'AppCallDenied: not allowed' });
  });

  it('a callback that throws synchronously is contained the same way', async () => {
    const out = await run('try { await t() } catch (e) { return e.name }', {
      bindings: ['t'],
      onCall: () => {
        throw new Error('sync');
      },
    });
    expect(out.valueJson).toBe('"AppCallFailed"');
  });

  it('a callback that throws becomes AppCallFailed without the host error', async () => {
    const out = await run(
      'try { await t() } catch (e) { return [e.name, e.message, e.details.reason, e.stack] }',
      {
        bindings: ['t'],
        onCall: async () => {
          throw new Error('secret host failure at /srv/app.ts:12');
        },
      },
    );
    const [name, message, reason, stack] = JSON.parse(out.valueJson!);
    expect([name, message, reason]).toEqual(['AppCallFailed', 'the binding call failed', 'host-error']);
    expect(stack).not.toMatch(/secret|srv/);
  });
});

describe('binding names are refused before the run starts', () => {
  it('refuses $tools, lambda and console (the contract examples) and keeps onCall untouched', async () => {
    expect(validateBindingNames(['$tools'])).toBe('invalid binding name: $tools (not a plain identifier)');
    expect(validateBindingNames(['lambda'])).toBe('invalid binding name: lambda (reserved by Python)');
    expect(validateBindingNames(['console'])).toBe(
      'invalid binding name: console (kept by the run environment)',
    );
    let called = false;
    const out = await run('globalThis.ran = 1; console.log("ran")', {
      bindings: ['ok_tool', 'lambda'],
      onCall: async (c) => {
        called = true;
        return echo(c);
      },
    });
    expect(out.failure).toEqual({
      kind: 'exception',
      message: 'invalid binding name: lambda (reserved by Python)',
    });
    expect(out.logs).toEqual([]);
    expect(called).toBe(false);
  });

  it('checks every part of connection.capability names', () => {
    expect(
      validateBindingNames(['work_calendar.list_events', 'search', 'notes.read_note', '_x1']),
    ).toBeUndefined();
    expect(validateBindingNames(['class'])).toBe('invalid binding name: class (reserved by JavaScript)');
    expect(validateBindingNames(['apps'])).toBe('invalid binding name: apps (kept by the run environment)');
    expect(validateBindingNames(['globalThis'])).toBe(
      'invalid binding name: globalThis (kept by the run environment)',
    );
    expect(validateBindingNames(['fetch'])).toBe('invalid binding name: fetch (kept by the run environment)');
    expect(validateBindingNames(['1tool'])).toBe('invalid binding name: 1tool (not a plain identifier)');
    expect(validateBindingNames(['tool-x'])).toBe('invalid binding name: tool-x (not a plain identifier)');
    expect(validateBindingNames(['café'])).toBe('invalid binding name: café (not a plain identifier)');
    expect(validateBindingNames([''])).toBe('invalid binding name:  (not a plain identifier)');
    expect(validateBindingNames(['a.b.c'])).toBe('invalid binding name: a.b.c (not a plain identifier)');
    expect(validateBindingNames(['mail.def'])).toBe('invalid binding name: mail.def (reserved by Python)');
    expect(validateBindingNames(['call.x'])).toBe(
      'invalid binding name: call.x (kept by the run environment)',
    );
    expect(validateBindingNames(['x.__proto__'])).toBe(
      'invalid binding name: x.__proto__ (kept by the run environment)',
    );
    expect(validateBindingNames(['Object'])).toBe(
      'invalid binding name: Object (kept by the run environment)',
    );
  });
});

describe('idle hosts are bounded across tenants', () => {
  it('keeps at most maxIdleTotal idle hosts, retiring the one idle the longest', async () => {
    const bounded = createEngine({ maxIdleTotal: 2, prewarm: false });
    try {
      const pids = new Map<string, number | undefined>();
      for (const partition of ['t1', 't2', 't3', 't4']) {
        const out = await bounded.execute('return 1', { partition });
        expect(out.valueJson).toBe('1');
        pids.set(partition, out.hostPid);
      }
      // Four tenants ran one after another; only the last two keep a host.
      const deadline = Date.now() + 10_000;
      while ((bounded.stats?.().processes ?? 0) > 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(bounded.stats?.().processes).toBe(2);
      // The newest tenant's host is still warm: the same pid serves its next run.
      const again = await bounded.execute('return 2', { partition: 't4' });
      const first = await bounded.execute('return 3', { partition: 't1' });
      expect(again.valueJson).toBe('2');
      expect(again.hostPid).toBe(pids.get('t4'));
      // The oldest tenant's host was retired: a new process serves it.
      expect(first.valueJson).toBe('3');
      expect(first.hostPid).not.toBe(pids.get('t1'));
    } finally {
      await bounded.close();
    }
  });
});
