/**
 * The call journal's Lua scripts, loaded once (lua/*.lua), and the shape of one outcome for
 * `complete`. Moved out of call-journal.ts (a pure move), which runs them directly.
 */

import { loadScript } from './lua-scripts.ts';
import type { CompletionEvent } from './types.ts';

/** Arguments per call of `lua/claim-1.lua` (its header names them). */
const CLAIM_FIELDS = 12;
export const CLAIM = loadScript('claim-1', { CLAIM_FIELDS });

export const MARK_SENT = loadScript('mark-sent-1');

/** One outcome for `lua/complete-2.lua`, with what its group shares. */
export interface Completion {
  runId: string;
  event: CompletionEvent | undefined;
  fields: (string | number)[];
}

/** Arguments per call of `lua/complete-2.lua`. */
const COMPLETE_FIELDS = 6;
export const COMPLETE = loadScript('complete-2', { COMPLETE_FIELDS });

export const BEGIN_ATTEMPT = loadScript('begin-attempt-3');
export const LEASE_AND_BEGIN = loadScript('lease-and-begin-9');
