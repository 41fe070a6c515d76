/**
 * The reader of a `call` event's one-seal form (core config `ISLET_CALL_ONE_SEAL`): the stream's
 * entry names its call (`i`, the journal's field) and how long it took (`ms`), nothing sealed of its
 * own; the call's binding, source, outcome and arguments are its run's journal entry's, the outcome
 * and arguments opened there (sealed once each, by the claim and the complete). The data is built
 * as the sealed form's writer builds it (call-event.ts `callEventOf`), so a reader of the events API
 * or SSE cannot tell the forms apart. The event is appended in the script that stores the outcome
 * (lua/complete-2.lua), so its entry is `done` whenever the event exists, and a run's end expires
 * the journal with the stream (includes/transition.lua), so it outlives the event; a journal gone
 * all the same (an end a release before round 45 wrote, a run outliving retention after its last
 * call, a read in the millisecond both expire: services/runs README) leaves the event its index
 * and duration. The journal is the event's run's (the stream's run id,
 * never a name from the entry), so the event's data stays its run's call's, as the sealed form's was.
 */
import type { BindingOutcome } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { callEventOf, jsonOrText } from './call-event.ts';
import { claimPartField, type StoredEntry, sealedArgsOf } from './journal-entry-layout.ts';
import { journalKeys } from './keys.ts';
import type { CallSource, Sealer } from './types.ts';

/** A one-seal `call` event as stored: its call's index and its duration, as text. */
export interface CallEventRef {
  i: string;
  ms: string;
}

const journalOf = journalKeys().journal;

/**
 * The data of `refs` (one run's one-seal `call` events), in their order: two reads at most (the
 * entries and their claim parts, then layout 2's sources), and only those calls' texts opened.
 */
export async function callEventsFromJournal(
  redis: Redis,
  sealer: Sealer,
  runId: string,
  refs: readonly CallEventRef[],
): Promise<Record<string, unknown>[]> {
  const key = journalOf(runId);
  const fields: string[] = [];
  for (const ref of refs) fields.push(ref.i, claimPartField(ref.i));
  const got = await redis.hmget(key, ...fields);
  const stored: (StoredEntry | undefined)[] = [];
  const sourceIds = new Set<string>();
  for (let r = 0; r < refs.length; r++) {
    const raw = got[2 * r];
    const entry = raw ? (JSON.parse(raw) as StoredEntry) : undefined;
    stored.push(entry);
    // Layout 2 names its source by an id (`#s:<id>`); layout 1 holds its JSON text.
    if (entry?.s && entry.s.charCodeAt(0) !== 123) sourceIds.add(entry.s);
  }
  const sourceTexts = new Map<string, string>();
  if (sourceIds.size > 0) {
    const ids = [...sourceIds];
    const texts = await redis.hmget(key, ...ids.map((id) => `#s:${id}`));
    ids.forEach((id, n) => {
      const text = texts[n];
      if (text) sourceTexts.set(id, text);
    });
  }
  const sources = new Map<string, CallSource>();
  const sourceOf = (s: string | undefined): CallSource | undefined => {
    if (!s) return undefined;
    let source = sources.get(s);
    if (source === undefined) {
      const text = s.charCodeAt(0) === 123 ? s : sourceTexts.get(s);
      if (text === undefined) return undefined;
      source = JSON.parse(text) as CallSource;
      sources.set(s, source);
    }
    return source;
  };
  return refs.map((ref, r) => {
    const entry = stored[r];
    const index = Number(ref.i);
    const durationMs = Number(ref.ms);
    // Not `done` (no outcome), or gone: what the event itself holds.
    if (!entry || entry.o === undefined || entry.i !== index) return { index, durationMs };
    const outcome = JSON.parse(sealer.open(entry.o)) as BindingOutcome;
    const argsJson = sealer.open(entry.a ?? sealedArgsOf(got[2 * r + 1] ?? ''));
    return callEventOf(index, entry.b, sourceOf(entry.s), outcome, jsonOrText(argsJson), durationMs);
  });
}
