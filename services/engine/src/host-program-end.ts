/**
 * What the program's end becomes as the run's `done` (host-run.ts `onDone`, `onFail`): its
 * completion, its throw, or what the harness could not encode, each checked here before it is
 * reported, because the harness runs beside the program.
 */
import { outputLimitMessage } from './limits.ts';
import type { HostDone } from './wire.ts';

const ERROR_TEXT_MAX = 64 * 1024;
const KNOWN_ENCODE_LINES = new Set([
  'binding arguments must be lossless JSON',
  'program completion must be lossless JSON',
  'cannot encode a sparse JSON array',
]);

/** The harness could not encode what the program handed it (`message`, one of the known lines). */
export function encodeFailure(message: unknown, detail?: unknown): HostDone {
  const line =
    typeof message === 'string' && KNOWN_ENCODE_LINES.has(message)
      ? message
      : 'binding arguments must be lossless JSON';
  return {
    status: 'failed',
    kind: 'exception',
    message: line,
    ...(typeof detail === 'string' ? { detail: detail.slice(0, 1000) } : {}),
  };
}

/**
 * The program ended (`kind`: 'value', 'invalid' or 'throw', with the harness's `a` and `b`).
 * `used`: the output the value shares its limit with, bytes; `outputBytes`: that limit.
 */
export function programEnd(
  kind: unknown,
  a: unknown,
  b: unknown,
  used: number,
  outputBytes: number,
): HostDone {
  if (kind === 'value') {
    if (a === undefined) {
      return { status: 'completed' };
    }
    if (typeof a !== 'string') {
      return invalidOutput('program completion must be lossless JSON');
    }
    try {
      JSON.parse(a);
    } catch {
      return invalidOutput('program completion must be lossless JSON');
    }
    const bytes = Buffer.byteLength(a, 'utf8');
    if (used + bytes > outputBytes) {
      return {
        status: 'failed',
        kind: 'output-limit',
        message: outputLimitMessage(outputBytes),
      };
    }
    return { status: 'completed', valueJson: a };
  }
  if (kind === 'invalid') {
    const line =
      a === 'cannot encode a sparse JSON array' ? a : ('program completion must be lossless JSON' as const);
    return invalidOutput(line, typeof b === 'string' ? b : undefined);
  }
  // 'throw'
  if (b === true || typeof a !== 'string') {
    return {
      status: 'failed',
      kind: 'exception',
      message: 'program threw an unrenderable value',
    };
  }
  return {
    status: 'failed',
    kind: 'exception',
    message: a.slice(0, ERROR_TEXT_MAX),
    ...programLocation(b),
  };
}

function invalidOutput(message: string, detail?: string): HostDone {
  return {
    status: 'failed',
    kind: 'invalid-output',
    message,
    ...(detail !== undefined ? { detail: detail.slice(0, 1000) } : {}),
  };
}

/** Longest program stack kept on a failure, characters. */
const STACK_TEXT_MAX = 4000;

/**
 * Where the program threw, as the harness found it in the error's stack (JSON text). Re-checked
 * here: the harness runs beside the program, so anything malformed is dropped, never trusted.
 */
function programLocation(b: unknown): { where?: { line: number; column: number; stack: string } } {
  if (typeof b !== 'string' || b.length > STACK_TEXT_MAX * 2) return {};
  try {
    const o = JSON.parse(b) as Record<string, unknown>;
    const { line, column, stack } = o;
    if (!Number.isSafeInteger(line) || !Number.isSafeInteger(column) || typeof stack !== 'string') return {};
    if ((line as number) < 1 || (column as number) < 1) return {};
    return {
      where: { line: line as number, column: column as number, stack: stack.slice(0, STACK_TEXT_MAX) },
    };
  } catch {
    return {};
  }
}
