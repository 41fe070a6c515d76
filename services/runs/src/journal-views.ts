/**
 * A call journal's entries as its readers see them (call-journal.ts): each stored entry opened into
 * a view (outcome opened, source resolved by layout) or an entry (arguments opened too), from the
 * journal hash's fields as read, or from a pushed end's journal as its one parse gave it.
 */
import type { BindingOutcome } from '@islet/protocol';
import { claimPartField, type StoredEntry, sealedArgsOf } from './journal-entry-layout.ts';
import type { CallSource, JournalCallView, JournalEntry, Sealer } from './types.ts';

export function journalViews(sealer: Sealer, outcomeSealer: Sealer) {
  const openOutcome = (sealed: string): BindingOutcome =>
    JSON.parse(outcomeSealer.open(sealed)) as BindingOutcome;

  /**
   * `sources`: the sources parsed so far for one read of a journal, by their text. A run's calls of
   * one binding share one source text (`sourceJson` above), so the waiter's answer at a 20-call
   * run's end parses it once, not 20 times (round 39 `call-end`); the views share the object, which
   * no reader changes (record.ts copies the reference into the answer).
   */
  const toView = (
    stored: StoredEntry,
    sources?: Map<string, CallSource>,
    all?: Record<string, string>,
  ): JournalCallView => {
    const view: JournalCallView = {
      index: stored.i,
      binding: stored.b,
      operationId: stored.op,
      state: stored.st,
      attempt: stored.at,
      startedAtMs: stored.t0,
    };
    if (stored.s) {
      let source = sources?.get(stored.s);
      if (source === undefined) {
        // Layout 1: the source's JSON text; layout 2: the id of the journal's `#s:<id>` field.
        const text = stored.s.charCodeAt(0) === 123 ? stored.s : all?.[`#s:${stored.s}`];
        if (text !== undefined) {
          source = JSON.parse(text) as CallSource;
          sources?.set(stored.s, source);
        }
      }
      if (source !== undefined) view.source = source;
    }
    if (stored.o !== undefined) view.outcome = openOutcome(stored.o);
    if (stored.seq !== undefined) view.deliverySeq = stored.seq;
    if (stored.t1 !== undefined) view.settledAtMs = stored.t1;
    return view;
  };

  /** `part`: the entry's layout-2 claim part (`#c<index>`), for an entry without `a`. */
  const toEntry = (
    stored: StoredEntry,
    part: string | undefined,
    sources?: Map<string, CallSource>,
    all?: Record<string, string>,
  ): JournalEntry => ({
    ...toView(stored, sources, all),
    argsJson: sealer.open(stored.a ?? sealedArgsOf(part ?? '')),
  });

  /** The hash's call entries (not its `#` counters nor claim parts), by index. */
  const storedOf = (all: Record<string, string>): StoredEntry[] => {
    const stored: StoredEntry[] = [];
    for (const [field, raw] of Object.entries(all)) {
      if (!field.startsWith('#')) stored.push(JSON.parse(raw) as StoredEntry);
    }
    return stored.sort((a, b) => a.i - b.i);
  };

  const entriesOf = (all: Record<string, string>): JournalEntry[] => {
    const sources = new Map<string, CallSource>();
    return storedOf(all).map((stored) => toEntry(stored, all[claimPartField(stored.i)], sources, all));
  };
  const callsOf = (all: Record<string, string>): JournalCallView[] => {
    const sources = new Map<string, CallSource>();
    return storedOf(all).map((stored) => toView(stored, sources, all));
  };
  /**
   * The calls of a pushed end's journal, its flat `[field, value, …]` as the push's one parse gave
   * it. A call entry's and a layout-2 source's value is its stored JSON text (`<id> end2`, parsed
   * here, one parse each) or that JSON already parsed with the push: `<id> end3`, which the next
   * release's end script pushes (the stored texts spliced into the message, not encoded as strings:
   * no escapes, one parse; test/bench/README.md round 42 `format-next`). The same views as
   * `callsOf` of the stored journal. Not an array: no calls.
   */
  const callsOfPushed = (flat: unknown): JournalCallView[] => {
    if (!Array.isArray(flat)) return [];
    const stored: StoredEntry[] = [];
    const texts: Record<string, string> = {};
    const sources = new Map<string, CallSource>();
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = String(flat[i]);
      const value = flat[i + 1] as unknown;
      // `#`: a counter, a claim part or a source (`#s:<id>`); anything else a call's entry.
      if (name.charCodeAt(0) !== 35)
        stored.push((typeof value === 'string' ? JSON.parse(value) : value) as StoredEntry);
      else if (name.startsWith('#s:')) {
        if (typeof value === 'string') texts[name] = value;
        else sources.set(name.slice(3), value as CallSource);
      }
    }
    stored.sort((a, b) => a.i - b.i);
    return stored.map((entry) => toView(entry, sources, texts));
  };

  return { openOutcome, toView, toEntry, storedOf, entriesOf, callsOf, callsOfPushed };
}
