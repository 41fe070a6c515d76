/**
 * How an App says "I need more input" (the program gets `AppInputRequired`): an `http` App answers
 * 2xx with the body `{"inputRequired": {"message": "<text>"}}`; a `client` connection posts the same
 * body to `POST /v1/code-runs/{id}/calls/{index}/result`. The outcome carries the call's journal
 * operation id, so whoever reads the error can answer that App operation outside the program.
 */
import type { BindingOutcome } from '@islet/engine';
import { z } from 'zod';
import { jsonDepthExceeds } from './json-depth.ts';
import { lossyNumberMessage, parseLosslessJson } from './lossless-json.ts';

/** Longest `inputRequired.message`, characters (the same cap as a client's error message). */
const INPUT_REQUIRED_MESSAGE_MAX_CHARS = 10_000;

export const inputRequiredSchema = z
  .object({
    inputRequired: z
      .object({
        message: z
          .string()
          .max(INPUT_REQUIRED_MESSAGE_MAX_CHARS)
          .regex(/\S/, 'inputRequired.message must not be empty'),
      })
      .strict(),
  })
  .strict();

export function inputRequiredOutcome(message: string, operationId: string): BindingOutcome {
  return { type: 'error', name: 'AppInputRequired', message, details: { operationId } };
}

/**
 * The outcome of an `http` App's 2xx answer. A JSON object whose only key is `inputRequired` is an
 * input request and nothing else (so a malformed one is a failed call, never silently a result);
 * any other JSON is the call's result.
 */
export function httpAnswerOutcome(text: string, operationId: string, maxDepth = 64): BindingOutcome {
  if (jsonDepthExceeds(text, maxDepth))
    return {
      type: 'error',
      name: 'AppCallFailed',
      message: `the App's answer nests deeper than ${maxDepth} levels`,
      details: { reason: 'too-deep', maxDepth },
    };
  let value: unknown;
  try {
    const parsed = text.length === 0 ? { ok: true as const, value: null } : parseLosslessJson(text);
    if (!parsed.ok)
      return {
        type: 'error',
        name: 'AppCallFailed',
        message: lossyNumberMessage(parsed.source, parsed.key),
        details: { reason: 'lossy-number', number: parsed.source.slice(0, 40) },
      };
    value = parsed.value;
  } catch {
    return {
      type: 'error',
      name: 'AppCallFailed',
      message: 'the App answered with a body that is not JSON',
      details: { reason: 'bad-json' },
    };
  }
  if (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.keys(value).length === 1 &&
    'inputRequired' in value
  ) {
    const parsed = inputRequiredSchema.safeParse(value);
    if (parsed.success) return inputRequiredOutcome(parsed.data.inputRequired.message, operationId);
    return {
      type: 'error',
      name: 'AppCallFailed',
      message: `the App asked for input without a usable message (send {"inputRequired": {"message": "<text>"}}, at most ${INPUT_REQUIRED_MESSAGE_MAX_CHARS} characters)`,
      details: { reason: 'bad-input-required' },
    };
  }
  return { type: 'result', valueJson: JSON.stringify(value) };
}
