/** Builds the Code Mode record (`GET /v1/code-runs/:id`) from the stored run and its journal. */
import type { BindingOutcome } from '@islet/engine';
import type { CallOutcomeRecord, CodeRunCall, CodeRunRecord } from '@islet/protocol';
import type { JournalCallView, StoredRun } from '@islet/runs';

export function outcomeRecord(outcome: BindingOutcome): CallOutcomeRecord {
  switch (outcome.type) {
    case 'result':
      return { _tag: 'Done', result: { _tag: 'Completed', value: safeParse(outcome.valueJson) } };
    case 'error': {
      const error: { name: typeof outcome.name; message: string; details?: Record<string, unknown> } = {
        name: outcome.name,
        message: outcome.message,
      };
      if (outcome.details) error.details = outcome.details;
      return { _tag: 'Done', result: { _tag: 'Failed', error } };
    }
    case 'stop':
      return outcome.code === 'suspended'
        ? { _tag: 'Waiting' }
        : { _tag: 'Done', result: { _tag: 'Stopped', code: outcome.code, message: outcome.message } };
  }
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}

/** `waiting`: the call waits for a decision (its outcome shows `Waiting` until it is answered). */
export function callRecord(e: JournalCallView, waiting = false): CodeRunCall {
  const call: CodeRunCall = {
    index: e.index,
    binding: e.binding,
    operationId: e.operationId,
    outcome:
      e.state === 'done' && e.outcome
        ? outcomeRecord(e.outcome)
        : waiting
          ? { _tag: 'Waiting' }
          : { _tag: 'Pending' },
  };
  if (e.source) call.source = e.source;
  return call;
}

export function toRecord(
  run: StoredRun,
  entries: JournalCallView[],
  waitingIndexes: ReadonlySet<number> = new Set(),
): CodeRunRecord {
  const record: CodeRunRecord = {
    id: run.id,
    session: run.session,
    turn: run.turn,
    callId: run.callId,
    status: run.status,
    code: run.code,
    reason: run.description,
    calls: entries.map((e) => callRecord(e, waitingIndexes.has(e.index))),
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
  };
  if (run.result) record.result = run.result;
  if (run.text !== undefined) record.text = run.text;
  if (run.request.style) record.style = run.request.style;
  // What a re-run sends again: the same Apps, not whatever the tenant has by then.
  if (run.request.connections) record.connections = run.request.connections;
  if (run.request.limits) record.limits = run.request.limits;
  return record;
}
