/**
 * A run record's sealed fields as one sealed text at each end of a run (`ISLET_WRITE_FORMAT=2`,
 * round 40 `seal-one`): the program and its request as `pick` (written at the submit, opened at the
 * pick-up), the result and its text as `ended` (sealed at the end). One seal and one open where
 * there were two: each AES-GCM cipher made on a run's path is one of the largest parts of a
 * runner's own CPU (a cold `createDecipheriv` at the pick-up, test/bench/README.md round 39
 * `sealer`). A Completed run's text is its result's (the engine's `renderResultText`), so it is
 * not stored: `0` in its place, and the reader renders it (`completedText`).
 *
 * Each is sealed bound to its field and run (the sealer's `bind`): copied to another run's record
 * or to another field, it does not open. Records written in format 1 (`code`, `request`, `result`,
 * `text` / `textRef`, each sealed alone and bound to the key id only) read as before.
 */
import type { Sealer } from '@islet/core';
import type { RunResult } from '@islet/protocol';
import type { RunRequestData } from './run-store-types.ts';
import { type TextRef, textFromRef, textRefOf } from './stored-text.ts';

/** The record's field of the program and its request (format 2). */
export const PICK_FIELD = 'pick';
/** The record's field of the result and its text (format 2). */
export const ENDED_FIELD = 'ended';

type CompletedResult = Extract<RunResult, { _tag: 'Completed' }>;

const bindOf = (field: string, runId: string): string => `${field}\0${runId}`;

/** The engine's text of a run that printed nothing and returned nothing (engine `result-text.ts`). */
const NO_OUTPUT_TEXT = '(run_code completed with no output)';

/**
 * A Completed result's text as the engine renders it (`renderResultText`: the printed lines, then
 * the returned value, a string as itself, anything else as its JSON), from the stored result; not
 * for a failed one. A writer leaves the text out only when this gives it exactly, so a difference
 * from the engine's rendering stores the text rather than changing it.
 */
export function completedText(result: CompletedResult): string {
  const parts = result.logs.map((line) => line.text);
  const value = result.value;
  if (value !== undefined) parts.push(typeof value === 'string' ? value : JSON.stringify(value));
  return parts.length === 0 ? NO_OUTPUT_TEXT : parts.join('\n');
}

export function sealPick(sealer: Sealer, runId: string, code: string, request: RunRequestData): string {
  return sealer.seal(JSON.stringify([code, request]), bindOf(PICK_FIELD, runId));
}

export function openPick(
  sealer: Sealer,
  runId: string,
  sealed: string,
): { code: string; request: RunRequestData } {
  const [code, request] = JSON.parse(sealer.open(sealed, bindOf(PICK_FIELD, runId))) as [
    string,
    RunRequestData,
  ];
  return { code, request };
}

/**
 * The end's `[result, text]`: the text `0` (a Completed run's, rendered on read), a `TextRef` (the
 * printed lines it repeats taken out, stored-text.ts), or itself. `textIsResult`: the writer knows
 * the text is the Completed result's own (`completedText`'s; the runner's outcome-mapping.ts, which
 * rendered it once), so it is not rendered again to be compared.
 */
export function sealEnded(
  sealer: Sealer,
  runId: string,
  end: { result: RunResult; text: string; textIsResult?: boolean },
): string {
  const { result, text } = end;
  const stored: 0 | TextRef | string =
    result._tag === 'Completed' && (end.textIsResult === true || completedText(result) === text)
      ? 0
      : (textRefOf(text, result) ?? text);
  return sealer.seal(JSON.stringify([result, stored]), bindOf(ENDED_FIELD, runId));
}

/**
 * An opened end's result as the JSON text its writer stringified (`sealEnded`: `[result, 0]`), by
 * the result object `openEnded` made of it with `keepResultJson`. A response that carries that
 * result whole splices the text in (the gateway's waited submit, `recordJson`) instead of
 * stringifying the value it was just parsed into: every writer's text is `JSON.stringify`'s, which
 * stringifying its parse gives back byte for byte. Weakly held: gone with the result.
 */
const resultJsonOf = new WeakMap<RunResult, string>();

/**
 * The least result text kept (characters of its JSON): under it the splice's own work (the record
 * stringified in two parts and joined) costs more than the result's stringify it saves — a trivial
 * run's 50-character result +0.3 k instructions an answer, 40 printed lines' 1.5 k −49 k
 * (test/bench/end-splice-count.sh, round 51 `gateway-end`).
 */
export const RESULT_JSON_KEEP_MIN_CHARS = 256;

/** The result's JSON text as opened (`openEnded` with `keepResultJson`), or undefined. */
export function openedResultJson(result: RunResult): string | undefined {
  return resultJsonOf.get(result);
}

/**
 * `keepResultJson`: the caller answers the result whole at once (a pushed end's waiter), so its
 * text is kept for `openedResultJson` when the end is `[result, 0]` (a Completed run's rendered
 * text, the common end) and the result's text is `RESULT_JSON_KEEP_MIN_CHARS` or longer; any other
 * end keeps none and is stringified as before.
 */
export function openEnded(
  sealer: Sealer,
  runId: string,
  sealed: string,
  keepResultJson = false,
): { result: RunResult; text: string } {
  const plain = sealer.open(sealed, bindOf(ENDED_FIELD, runId));
  const [result, stored] = JSON.parse(plain) as [RunResult, 0 | TextRef | string];
  if (
    keepResultJson &&
    stored === 0 &&
    plain.length - 4 >= RESULT_JSON_KEEP_MIN_CHARS &&
    plain.endsWith(',0]') &&
    typeof result === 'object' &&
    result
  )
    resultJsonOf.set(result, plain.slice(1, -3));
  const text =
    typeof stored === 'string'
      ? stored
      : stored === 0
        ? completedText(result as CompletedResult)
        : textFromRef(stored, result);
  return { result, text };
}
