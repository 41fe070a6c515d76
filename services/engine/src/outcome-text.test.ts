/**
 * A call's outcome goes to its sandbox host as a frame made as text (run-frames.ts `outcomeFrame`):
 * the same bytes as the frame object's `JSON.stringify`, no frame object stringified on the call's
 * path, and the channel's size limit still refusing a result too large for it with the same text.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createEngine } from './engine.ts';
import { HostProcess } from './host-process.ts';
import { outcomeFrame } from './run-frames.ts';
import type { BindingOutcome } from './types.ts';

// The `small` partition's hosts encode under a 64 KiB message limit (the host reads under its own).
const start = HostProcess.start.bind(HostProcess);
vi.spyOn(HostProcess, 'start').mockImplementation((options) =>
  start(
    options.partition === 'small'
      ? { ...options, frameLimits: { maxFrameBytes: 16 * 1024, maxMessageBytes: 64 * 1024 } }
      : options,
  ),
);
const engine = createEngine({ maxIdlePerPartition: 1 });
afterAll(() => engine.close());

const run = (code: string, partition: string, valueJson: (argsJson: string) => string) =>
  engine.execute(code, {
    bindings: ['t'],
    limits: { timeoutMs: 30_000 },
    partition,
    onCall: (call) => Promise.resolve({ type: 'result', valueJson: valueJson(call.argsJson) }),
  });

describe("a call's outcome frame", () => {
  it('is the bytes of the frame object stringified, for results and errors, with and without turnMs', () => {
    const strings = ['', 'plain', 'é✓😀', '"quoted" \\ back', '\n\t\u0000\u001f', '\ud800 lone', '</script>'];
    const outcomes: Exclude<BindingOutcome, { type: 'stop' }>[] = [
      ...strings.map((s) => ({ type: 'result' as const, valueJson: JSON.stringify(s) })),
      { type: 'result', valueJson: '{"ok":true,"list":[1,2.5,null,"x"]}' },
      ...strings.map((s) => ({
        type: 'error' as const,
        name: 'AppCallFailed' as const,
        message: s,
        details: { reason: s, n: 1 },
      })),
      { type: 'error', name: 'AppCallDenied', message: 'no' },
    ];
    for (const outcome of outcomes)
      for (const turnMs of [undefined, 1, 4998, 120_000]) {
        const turn = turnMs === undefined ? {} : { turnMs };
        const object =
          outcome.type === 'result'
            ? { t: 'result', id: 7, valueJson: outcome.valueJson, ...turn }
            : {
                t: 'error',
                id: 7,
                name: outcome.name,
                message: outcome.message,
                detailsJson: JSON.stringify(outcome.details ?? {}),
                ...turn,
              };
        expect(outcomeFrame(7, outcome, turnMs)).toBe(JSON.stringify(object));
      }
  });

  it('stringifies no frame object for a lone call, and the program gets the value', async () => {
    const code = 'const a = await t({ n: 1 }); const b = await t({ n: 2 }); return [a, b]';
    await run(code, 'text', (args) => args); // the host started and warm
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      const out = await run(code, 'text', (args) => args);
      expect(out.status).toBe('completed');
      expect(JSON.parse(out.valueJson ?? 'null')).toEqual([{ n: 1 }, { n: 2 }]);
      const frames = stringify.mock.calls.filter(
        ([value]) => typeof value === 'object' && value !== null && (value as { t?: unknown }).t === 'result',
      );
      expect(frames).toHaveLength(0);
    } finally {
      stringify.mockRestore();
    }
  });

  it('a result over the channel limit still ends the run with the same text; one under it arrives', async () => {
    const code = 'const v = await t(null); return v.length';
    const under = await run(code, 'small', () => JSON.stringify('x'.repeat(60 * 1024)));
    expect(under.status).toBe('completed');
    expect(under.valueJson).toBe(String(60 * 1024));
    const over = await run(code, 'small', () => JSON.stringify('x'.repeat(70 * 1024)));
    expect(over.status).toBe('failed');
    expect(over.failure).toMatchObject({
      kind: 'protocol',
      message: 'a binding result is too large for the sandbox channel',
    });
  });
});
