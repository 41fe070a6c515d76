import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, renderResultText } from './index.ts';
import type { BindingCall } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());

describe('engine: the program and its bindings', () => {
  it('runs the program as the body of an async function: top-level await and return', async () => {
    const out = await engine.execute('const x = await Promise.resolve(20); return x + 22;');
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('42');
  });

  it('reaches apps.<connection>.<capability>, apps.call and flat tools, with JSON text across', async () => {
    const seen: BindingCall[] = [];
    const out = await engine.execute(
      `const a = await apps.work_calendar.list_events({ day: "2026-10-23" });
       const b = await apps.call("work_calendar.list_events", { day: "2026-10-24" });
       const c = await search("q");
       console.log("events", a.n + b.n);
       return [a, b, c];`,
      {
        bindings: ['work_calendar.list_events', 'search'],
        onCall: async (call) => {
          seen.push(call);
          return { type: 'result', valueJson: JSON.stringify({ n: call.index }) };
        },
      },
    );
    expect(out.status).toBe('completed');
    expect(JSON.parse(out.valueJson!)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    expect(seen).toEqual([
      { index: 0, binding: 'work_calendar.list_events', argsJson: '{"day":"2026-10-23"}' },
      { index: 1, binding: 'work_calendar.list_events', argsJson: '{"day":"2026-10-24"}' },
      { index: 2, binding: 'search', argsJson: '"q"' },
    ]);
    expect(out.logs).toEqual([{ level: 'log', text: 'events 1' }]);
    expect(renderResultText(out)).toBe('events 1\n[{"n":0},{"n":1},{"n":2}]');
  });
});
