/**
 * A journal entry's stored layout (call-journal.ts's top comment names both layouts): the entry's
 * fields at `<index>` and, in layout 2, the field and the text of its claim part `#c<index>`. Moved
 * out of call-journal.ts (a pure move), which calls these directly.
 */
import type { JournalState } from './types.ts';

/** An entry at `<index>`; `h`, `a`, `tk` only in layout 1 (layout 2 keeps them at `#c<index>`). */
export interface StoredEntry {
  i: number;
  b: string;
  h?: string;
  a?: string;
  s?: string;
  op: string;
  st: JournalState;
  at: number;
  tk?: string;
  t0: number;
  t1?: number;
  o?: string;
  seq?: number;
}

/** The field of a call's claim part in layout 2 (`#`: readers of entries skip it as a counter). */
export const claimPartField = (index: number | string): string => `#c${index}`;

/** The sealed arguments of a layout-2 claim part `<tk> <h> <a>` (none of the three holds a space). */
export function sealedArgsOf(part: string): string {
  return part.slice(part.indexOf(' ', part.indexOf(' ') + 1) + 1);
}
