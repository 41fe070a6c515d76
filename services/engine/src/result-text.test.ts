import { describe, expect, it } from 'vitest';
import { renderResultText } from './result-text.ts';
import type { RunOutcome } from './types.ts';

const base: RunOutcome = { status: 'completed', logs: [], outputTruncated: false, calls: [], durationMs: 1 };

describe('renderResultText (run_code contract: How the result reads)', () => {
  it('a finished run: the printed lines, then the returned value', () => {
    const out: RunOutcome = {
      ...base,
      logs: [
        { level: 'log', text: 'events 2' },
        { level: 'warn', text: 'slow calendar' },
      ],
      valueJson: '["Standup","Review"]',
    };
    expect(renderResultText(out)).toBe('events 2\nslow calendar\n["Standup","Review"]');
  });

  it('a returned string reads as itself; null and false are values', () => {
    expect(renderResultText({ ...base, valueJson: '"sent"' })).toBe('sent');
    expect(renderResultText({ ...base, valueJson: 'null' })).toBe('null');
    expect(renderResultText({ ...base, valueJson: 'false' })).toBe('false');
  });

  it('nothing printed, nothing returned: (run_code completed with no output)', () => {
    expect(renderResultText(base)).toBe('(run_code completed with no output)');
  });

  it('a failed run: code run failed (<kind>): <message>, then Captured output: when something was printed', () => {
    const failed: RunOutcome = {
      ...base,
      status: 'failed',
      failure: { kind: 'timeout', message: 'execution deadline reached (120000ms)' },
    };
    expect(renderResultText(failed)).toBe('code run failed (timeout): execution deadline reached (120000ms)');
    expect(renderResultText({ ...failed, logs: [{ level: 'log', text: 'step 1' }] })).toBe(
      'code run failed (timeout): execution deadline reached (120000ms)\n\nCaptured output:\nstep 1',
    );
  });

  it('a failed run keeps the file-sandbox facts: partial enforcement and a denied operation', () => {
    const failed: RunOutcome = {
      ...base,
      status: 'failed',
      failure: { kind: 'exception', message: 'Error: EACCES' },
      logs: [{ level: 'error', text: 'cannot write' }],
      sandbox: { mode: 'read-only', enforcement: 'partial', denied: true },
    };
    expect(renderResultText(failed)).toBe(
      [
        'code run failed (exception): Error: EACCES',
        'File sandbox: read-only; enforcement: partial; operation denied',
        'File sandbox enforcement is partial on this host.',
        '',
        'Captured output:',
        'cannot write',
      ].join('\n'),
    );
    expect(
      renderResultText({
        ...failed,
        logs: [],
        sandbox: { mode: 'workspace-write', enforcement: 'full', denied: true },
      }),
    ).toBe(
      'code run failed (exception): Error: EACCES\nFile sandbox: workspace-write; enforcement: full; operation denied',
    );
  });

  it('a stopped run reports as an abort and keeps its output', () => {
    const stopped: RunOutcome = {
      ...base,
      status: 'stopped',
      stop: { code: 'cancelled', message: 'the turn was interrupted', atCall: 2 },
      logs: [{ level: 'info', text: 'half done' }],
    };
    expect(renderResultText(stopped)).toBe(
      'code run failed (abort): the turn was interrupted\n\nCaptured output:\nhalf done',
    );
  });

  it('the file-denial line once: an uncaught denial already carries it; else it is its own line', () => {
    const denied = 'File sandbox: read-only; enforcement: full; operation denied';
    const failed: RunOutcome = {
      ...base,
      status: 'failed',
      failure: { kind: 'exception', message: `AppCallFailed: ${denied}` },
      sandbox: { mode: 'read-only', enforcement: 'full', denied: true },
    };
    expect(renderResultText(failed)).toBe(`code run failed (exception): AppCallFailed: ${denied}`);
    const other = { ...failed, failure: { kind: 'exception' as const, message: 'caught it, then threw' } };
    expect(renderResultText(other)).toBe(`code run failed (exception): caught it, then threw\n${denied}`);
  });

  it('a stopped run reads as an abort unless its kind word is given (Code Mode ReplayMismatch)', () => {
    const stopped: RunOutcome = {
      ...base,
      status: 'stopped',
      stop: { code: 'replay-mismatch', message: 'call 0 was mail.read_note', atCall: 0 },
    };
    expect(renderResultText(stopped)).toBe('code run failed (abort): call 0 was mail.read_note');
    expect(renderResultText(stopped, 'ReplayMismatch')).toBe(
      'code run failed (ReplayMismatch): call 0 was mail.read_note',
    );
  });
});
