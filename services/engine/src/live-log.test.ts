/**
 * `ExecuteOptions.onLog`, the live log the runner streams to a run's followers: lines arrive while
 * the program still runs, in order, as the outcome keeps them (cut to the output cap), and a
 * listener that throws changes nothing about the run.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { echo, runOn } from '../test/run-helpers.ts';
import { createEngine } from './index.ts';
import type { LogLine } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());
const run = runOn(engine);

describe('onLog (live log lines)', () => {
  it('hands each line over before the program goes on past its next call, in order, with its level', async () => {
    const told: LogLine[] = [];
    const seenAtCall: LogLine[][] = [];
    const out = await run(
      `console.log("one"); console.warn("two");
       await search("q");
       console.error("three");
       await search("r");
       return "done";`,
      {
        bindings: ['search'],
        onLog: (lines) => told.push(...lines),
        onCall: async (call) => {
          seenAtCall.push([...told]);
          return echo(call);
        },
      },
    );
    expect(out.status).toBe('completed');
    expect(seenAtCall).toEqual([
      [
        { level: 'log', text: 'one' },
        { level: 'warn', text: 'two' },
      ],
      [
        { level: 'log', text: 'one' },
        { level: 'warn', text: 'two' },
        { level: 'error', text: 'three' },
      ],
    ]);
    expect(told).toEqual(out.logs);
  });

  it('gives what the outcome keeps: past the cap only the fitting part, nothing after it', async () => {
    const told: LogLine[] = [];
    const out = await run(
      'console.log("a".repeat(600)); console.log("é".repeat(300)); console.log("never"); return 1',
      { limits: { timeoutMs: 5000, outputBytes: 1000 }, onLog: (lines) => told.push(...lines) },
    );
    expect(out.failure).toEqual({ kind: 'output-limit', message: 'output exceeded the cap of 1000 bytes' });
    expect(told.map((l) => l.text)).toEqual(['a'.repeat(600), 'é'.repeat(200)]);
    expect(told).toEqual(out.logs);
  });

  it("Code Mode's separate cap: the kept lines only, and the program goes on", async () => {
    const told: LogLine[] = [];
    const out = await run('for (let i = 0; i < 50; i++) console.log("line " + i); return "finished"', {
      limits: { timeoutMs: 5000, outputBytes: 40, outputCap: 'separate' },
      onLog: (lines) => told.push(...lines),
    });
    expect(out.status).toBe('completed');
    expect(out.outputTruncated).toBe(true);
    // The 40 bytes' worth, the last line cut (as limits.test.ts reads the outcome), nothing after it.
    expect(told.map((l) => l.text)).toEqual([
      'line 0',
      'line 1',
      'line 2',
      'line 3',
      'line 4',
      'line 5',
      'line',
    ]);
    expect(told).toEqual(out.logs);
  });

  it('a listener that throws changes nothing: same logs, same value, later lines still told', async () => {
    let calls = 0;
    const out = await run('console.log("x"); await search(1); console.log("y"); return 7', {
      bindings: ['search'],
      onCall: echo,
      onLog: () => {
        calls++;
        throw new Error('listener broke');
      },
    });
    expect(out.status).toBe('completed');
    expect(out.valueJson).toBe('7');
    expect(out.logs).toEqual([
      { level: 'log', text: 'x' },
      { level: 'log', text: 'y' },
    ]);
    expect(calls).toBe(2);
  });

  it('a run that prints nothing tells nothing', async () => {
    let calls = 0;
    const out = await run('return 1', { onLog: () => calls++ });
    expect(out.status).toBe('completed');
    expect(calls).toBe(0);
  });
});
