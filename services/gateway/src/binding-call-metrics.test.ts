/**
 * A binding call's count and duration (`islet_binding_calls_total`, `…_duration_seconds`) go into
 * series found once per outcome (core's metric-series.ts), not through prom-client's `inc(labels)`
 * / `observe(labels, v)`, which check and key the labels every call: a hundred times a
 * hundred-call run. The scrape is prom-client's own and counts every call.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayDepsUnderTest, startGatewayDeps, toolRun } from '../test/gateway-harness.ts';
import { createBindingCalls } from './binding-calls.ts';

let gateway: GatewayDepsUnderTest;

beforeAll(async () => {
  gateway = await startGatewayDeps();
});

afterAll(async () => {
  await gateway?.close();
});

const sample = (text: string, name: string, outcome: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`outcome="${outcome}"`));
  return Number(line?.split(' ').pop() ?? Number.NaN);
};

describe('binding call metrics', () => {
  it('counts every call in its outcome series, calling prom-client once a series', async () => {
    const deps = gateway.deps;
    const runId = 'metrics-run';
    const { binding } = await toolRun(deps, {
      tenant: 'metrics',
      connectionName: 'Counted',
      tool: 'ping',
      runId,
    });
    const sent: number[] = [];
    // The App answers odd calls with HTTP 500 (a failed call), even ones with a result.
    deps.postToApp = async (_url, _headers, body) => {
      const index = (JSON.parse(body) as { context: { callIndex: number } }).context.callIndex;
      sent.push(index);
      return index % 2 ? { status: 500, text: '{"error":"no"}' } : { status: 200, text: '{"ok":true}' };
    };
    const inc = vi.spyOn(deps.metrics.bindingCalls, 'inc');
    const observe = vi.spyOn(deps.metrics.bindingCallDuration, 'observe');
    const bindingCalls = createBindingCalls(deps);
    const signal = new AbortController().signal;
    const serveAll = (from: number, count: number) =>
      Promise.all(
        Array.from({ length: count }, (_, i) =>
          bindingCalls.serve(runId, 1, { index: from + i, binding, argsJson: '{}' }, signal),
        ),
      );
    const first = await serveAll(0, 40);
    const second = await serveAll(40, 60);
    const outcomes = [...first, ...second].map((s) => s?.outcome.type);
    expect(outcomes.filter((t) => t === 'result')).toHaveLength(50);
    expect(outcomes.filter((t) => t === 'error')).toHaveLength(50);
    expect(sent.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));

    // Once a series (its first value makes it); the base called both a hundred times.
    expect(inc.mock.calls.map((c) => c[0])).toEqual(
      expect.arrayContaining([{ outcome: 'result' }, { outcome: 'failed' }]),
    );
    expect(inc).toHaveBeenCalledTimes(2);
    expect(observe).toHaveBeenCalledTimes(2);

    const text = await deps.metrics.registry.metrics();
    expect(sample(text, 'islet_binding_calls_total', 'result')).toBe(50);
    expect(sample(text, 'islet_binding_calls_total', 'failed')).toBe(50);
    expect(sample(text, 'islet_binding_call_duration_seconds_count', 'result')).toBe(50);
    expect(sample(text, 'islet_binding_call_duration_seconds_count', 'failed')).toBe(50);
    const inf = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('islet_binding_call_duration_seconds_bucket{le="+Inf"') &&
          l.includes('outcome="result"'),
      );
    expect(Number(inf?.split(' ').pop())).toBe(50);

    // A reset empties the series; the next call goes through prom-client again and is counted.
    deps.metrics.bindingCalls.reset();
    await serveAll(100, 1);
    expect(sample(await deps.metrics.registry.metrics(), 'islet_binding_calls_total', 'result')).toBe(1);
    inc.mockRestore();
    observe.mockRestore();
  });
});
