/**
 * What a Run (run.ts) reports: its outcome, the failures it reads from the host, the abort's text.
 */
import type { CallLogEntry, LogLine, RunFailure, RunOutcome } from './types.ts';
import type { HostDone } from './wire.ts';

/** The run's outcome from how it ended; a stop stands unless the host failed under it. */
export function runOutcome(
  stop: RunOutcome['stop'],
  failure: RunFailure | undefined,
  valueJson: string | undefined,
  logs: LogLine[],
  truncated: boolean,
  calls: CallLogEntry[],
): Omit<RunOutcome, 'durationMs'> {
  if (stop !== undefined && (failure === undefined || failure.kind !== 'worker-exit')) {
    return {
      status: 'stopped',
      stop,
      logs,
      outputTruncated: truncated,
      calls,
    };
  } else if (failure !== undefined) {
    return {
      status: 'failed',
      failure,
      logs,
      outputTruncated: truncated,
      calls,
    };
  } else {
    return {
      status: 'completed',
      ...(valueJson !== undefined ? { valueJson } : {}),
      logs,
      outputTruncated: truncated,
      calls,
    };
  }
}

/**
 * The outcome a Run settles with as it ends (run.ts `finish`): `runOutcome`'s, truncated when the
 * output cap ended it, with the isolate's CPU time the host reported and the time budget spent.
 */
export function settledOutcome(
  stop: RunOutcome['stop'],
  failure: RunFailure | undefined,
  valueJson: string | undefined,
  log: { lines: LogLine[]; truncated: boolean },
  calls: CallLogEntry[],
  cpuMs: number | undefined,
  spentMs: number | undefined,
): Omit<RunOutcome, 'durationMs'> {
  const outcome = runOutcome(stop, failure, valueJson, log.lines, log.truncated, calls);
  if (failure?.kind === 'output-limit') outcome.outputTruncated = true;
  if (cpuMs !== undefined) outcome.cpuMs = cpuMs;
  if (spentMs !== undefined) outcome.budgetSpentMs = Math.max(0, Math.round(spentMs));
  return outcome;
}

/** The program's own failure, as the host reported it with `done`. */
export function programFailure(done: Extract<HostDone, { status: 'failed' }>): RunFailure {
  return {
    kind: done.kind,
    message: done.message,
    ...(done.cause ? { cause: done.cause } : {}),
    ...(done.detail ? { detail: done.detail } : {}),
    ...(done.where ? { line: done.where.line, column: done.where.column, stack: done.where.stack } : {}),
  };
}

/** The host process ended while the run needed it. */
export function hostExitFailure(info: {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}): RunFailure {
  const how = info.signal ? `signal ${info.signal}` : `exit code ${info.code}`;
  const memory = /out of memory|heap limit|allocation failed/i.test(info.stderr);
  return {
    kind: 'worker-exit',
    message: memory
      ? `the sandbox host process ran out of memory (${how})`
      : `the sandbox host process ended early (${how})`,
    ...(memory ? { cause: 'memory' as const } : {}),
  };
}

/** The abort's text from what aborted the run (its signal, or its RunCancel: both carry `reason`). */
export function abortMessage(aborted: { readonly reason: unknown } | undefined): string {
  const reason: unknown = aborted?.reason;
  if (typeof reason === 'string' && reason !== '') return `the run was aborted: ${reason}`;
  if (reason instanceof Error && reason.name !== 'AbortError' && reason.message !== '') {
    return `the run was aborted: ${reason.message}`;
  }
  return 'the run was aborted';
}
