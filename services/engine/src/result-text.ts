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

/** The returned value as the result shows it: a string as itself, anything else as its JSON text. */
function valueText(valueJson: string): string {
  try {
    const value: unknown = JSON.parse(valueJson);
    if (typeof value === 'string') return value;
  } catch {
    // fall through: show the text as it is
  }
  return valueJson;
}

/** `kindWord` replaces the word in the parentheses (a Code Mode `ReplayMismatch` reads as itself). */
export function renderResultText(outcome: RunOutcome, kindWord?: string): string {
  const printed = outcome.logs.map((line) => line.text);
  if (outcome.status === 'completed') {
    const parts = [...printed];
    if (outcome.valueJson !== undefined) parts.push(valueText(outcome.valueJson));
    return parts.length === 0 ? NO_OUTPUT_TEXT : parts.join('\n');
  }
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
