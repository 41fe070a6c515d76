/**
 * The run_code result text, as the contract writes it:
 * - a finished run: the printed lines, then the returned value;
 * - nothing printed and nothing returned: `(run_code completed with no output)`;
 * - a failed run: `code run failed (<kind>): <message>`, the file-sandbox facts, then — when the
 *   program printed anything — a blank line, `Captured output:` and the fitting part of the output.
 * A stopped run reports as an abort.
 */
import type { RunOutcome } from './types.ts';

const NO_OUTPUT_TEXT = '(run_code completed with no output)';
export const PARTIAL_ENFORCEMENT_TEXT = 'File sandbox enforcement is partial on this host.';

function failureLine(kind: string, message: string): string {
  return `code run failed (${kind}): ${message}`;
}

export function sandboxDeniedLine(mode: string, enforcement: string): string {
  return `File sandbox: ${mode}; enforcement: ${enforcement}; operation denied`;
}

/** `parseValueJson`'s answer for a value text that is not JSON (the result shows it as it is). */
export const NOT_JSON: unique symbol = Symbol('not JSON');

/**
 * A completed run's `valueJson` parsed, once, for its text (`completedText`) and for whoever keeps
 * the value too (the runner's outcome mapping), so the value is not parsed twice (round 49
 * `engine-timers-2`). `NOT_JSON` when it does not parse.
 */
export function parseValueJson(valueJson: string): unknown {
  try {
    return JSON.parse(valueJson);
  } catch {
    return NOT_JSON;
  }
}

/**
 * A completed run's text from its value parsed (`parseValueJson`; undefined: the run returned no
 * value): the printed lines, then the value — a string as itself, anything else (and a text that
 * is not JSON) as the program's JSON text, byte for byte.
 */
export function completedText(outcome: RunOutcome, value: unknown): string {
  const parts = outcome.logs.map((line) => line.text);
  if (outcome.valueJson !== undefined) parts.push(typeof value === 'string' ? value : outcome.valueJson);
  return parts.length === 0 ? NO_OUTPUT_TEXT : parts.join('\n');
}

/** `kindWord` replaces the word in the parentheses (a Code Mode `ReplayMismatch` reads as itself). */
export function renderResultText(outcome: RunOutcome, kindWord?: string): string {
  if (outcome.status === 'completed')
    return completedText(
      outcome,
      outcome.valueJson === undefined ? undefined : parseValueJson(outcome.valueJson),
    );
  const printed = outcome.logs.map((line) => line.text);
  const kind = kindWord ?? (outcome.status === 'stopped' ? 'abort' : (outcome.failure?.kind ?? 'exception'));
  const message =
    outcome.status === 'stopped'
      ? (outcome.stop?.message ?? 'the run was stopped')
      : (outcome.failure?.message ?? '');
  const lines = [failureLine(kind, message)];
  const sandbox = outcome.sandbox;
  // Once per failure: an uncaught denial's message already carries the line.
  const denied = sandbox ? sandboxDeniedLine(sandbox.mode, sandbox.enforcement) : '';
  if (sandbox?.denied && !message.includes(denied)) lines.push(denied);
  if (sandbox?.enforcement === 'partial') lines.push(PARTIAL_ENFORCEMENT_TEXT);
  if (printed.length > 0) lines.push('', 'Captured output:', ...printed);
  return lines.join('\n');
}
