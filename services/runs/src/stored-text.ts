/**
 * A run's output is stored once. The run_code result text repeats the printed lines the result
 * already holds (`result.logs`): a run printing 63 MiB stored 126 MiB. So when the text contains
 * the lines (joined by newlines) it is stored as what surrounds them plus where they go (field
 * `textRef`), and put back together on read: the text read is byte for byte the text written.
 */
import type { RunResult } from '@islet/protocol';

/** Below this the lines are stored twice: the reference would cost about as much as it saves. */
const WORTH_BYTES = 1024;

export interface TextRef {
  /** Where the joined lines start in the text (UTF-16 index). */
  at: number;
  /** The text without the lines. */
  rest: string;
}

const joinedLines = (result: RunResult) => result.logs.map((l) => l.text).join('\n');

/** The text as a reference to the result's lines, or undefined when it is better stored whole. */
export function textRefOf(text: string, result: RunResult): TextRef | undefined {
  const joined = joinedLines(result);
  if (joined.length < WORTH_BYTES) return undefined;
  const at = text.indexOf(joined);
  if (at < 0) return undefined;
  return { at, rest: text.slice(0, at) + text.slice(at + joined.length) };
}

/** The text a reference stands for. */
export function textFromRef(ref: TextRef, result: RunResult): string {
  return ref.rest.slice(0, ref.at) + joinedLines(result) + ref.rest.slice(ref.at);
}
