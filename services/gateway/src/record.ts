import type { CodeRunCall, CodeRunRecord } from '@islet/protocol';
import { type JournalCallView, outcomeRecord, type StoredRun } from '@islet/runs';

export { outcomeRecord };

/** `waiting`: the call waits for a decision (its outcome shows `Waiting` until it is answered). */
function callRecord(e: JournalCallView, waiting = false): CodeRunCall {
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

/** No call waits for a decision: one set for every record (not one made and dropped a record). */
const NONE_WAITING: ReadonlySet<number> = new Set();

export function toRecord(
  run: StoredRun,
  entries: JournalCallView[],
  waitingIndexes: ReadonlySet<number> = NONE_WAITING,
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

/**
 * `JSON.stringify(record)` byte for byte, its `result` spliced in as `resultJson`, the result's JSON
 * text as the run's end was opened (runs' `openedResultJson`): a waited submit's answer does not
 * stringify the value it has just parsed (round 51 `gateway-end`). The record is `toRecord`'s:
 * its keys in its order, the result's among them; `undefined` values are left out by
 * `JSON.stringify` here as in the whole record's.
 */
export function recordJson(record: CodeRunRecord, resultJson: string): string {
  // The record's own key order (toRecord's), not a copy of it: a field added there lands here too.
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  let side = before;
  for (const key of Object.keys(record)) {
    if (key === 'result') side = after;
    else side[key] = record[key as keyof CodeRunRecord];
  }
  const head = JSON.stringify(before);
  const tail = JSON.stringify(after);
  // `{…}` then `,"result":…`, then the tail's members if any: the whole record's text.
  const start = `${head.length === 2 ? '{' : `${head.slice(0, -1)},`}"result":${resultJson}`;
  return tail.length === 2 ? `${start}}` : `${start},${tail.slice(1)}`;
}
