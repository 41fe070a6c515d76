/**
 * What a binding handler may hand back to a run, checked: only a well-formed outcome with lossless
 * JSON inside reaches the program; anything else ends the run.
 */
import { APP_ERROR_NAMES, STOP_CODES } from '@islet/protocol';
import type { AppErrorName, BindingCall, BindingHandler, BindingOutcome, StopCode } from './types.ts';

const APP_ERRORS = new Set<string>(APP_ERROR_NAMES);
const STOPS = new Set<string>(STOP_CODES);

export function isLosslessJson(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function noHandlerOutcome(): BindingOutcome {
  return {
    type: 'error',
    name: 'AppCallFailed',
    message: 'no binding handler is attached to this run',
    details: { reason: 'unavailable' },
  };
}

export function handlerFailedOutcome(): BindingOutcome {
  return {
    type: 'error',
    name: 'AppCallFailed',
    message: 'the binding call failed',
    details: { reason: 'host-error' },
  };
}

/** Hands a call to the run's handler: what it gives back, unchecked; a handler that throws gives a failed call. */
export function callHandler(
  handler: BindingHandler | undefined,
  call: BindingCall,
  signal: AbortSignal,
): Promise<BindingOutcome> {
  try {
    return handler === undefined
      ? Promise.resolve(noHandlerOutcome())
      : Promise.resolve(
          handler({ index: call.index, binding: call.binding, argsJson: call.argsJson }, { signal }),
        );
  } catch {
    return Promise.resolve(handlerFailedOutcome());
  }
}

/** A well-formed outcome with lossless JSON inside, or undefined. */
export function normalizeOutcome(raw: unknown): BindingOutcome | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const o = raw as Record<string, unknown>;
  if (o.type === 'result') {
    return isLosslessJson(o.valueJson) ? { type: 'result', valueJson: o.valueJson as string } : undefined;
  }
  if (o.type === 'error') {
    if (!APP_ERRORS.has(o.name as string)) return undefined;
    let details: Record<string, unknown> | undefined;
    if (o.details !== undefined) {
      try {
        details = JSON.parse(JSON.stringify(o.details)) as Record<string, unknown>;
      } catch {
        return undefined;
      }
      if (typeof details !== 'object' || details === null) return undefined;
    }
    return {
      type: 'error',
      name: o.name as AppErrorName,
      message: typeof o.message === 'string' ? o.message : '',
      ...(details !== undefined ? { details } : {}),
    };
  }
  if (o.type === 'stop') {
    if (!STOPS.has(o.code as string)) return undefined;
    return {
      type: 'stop',
      code: o.code as StopCode,
      message: typeof o.message === 'string' ? o.message : '',
    };
  }
  return undefined;
}
