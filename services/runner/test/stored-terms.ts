/**
 * A stored idle registration (`@islet/runs` handoff-terms.ts) read and edited in either of its
 * forms — the full one (a JSON object) or the compact one (a JSON array: id, token, lock ms, name,
 * hand-off key, then the start's carried values), which runners write by default since the release
 * after 9ec25e04 — so a test that copies a worker's registration under another id (a dead worker's,
 * a ghost) keeps the form the runner wrote.
 */

/** The terms a test reads or changes. */
export interface StoredTerms {
  token: string;
  lockDuration: number;
  name: string;
  handOff: string;
}

/** Where the compact form holds each of them. */
const AT: Record<keyof StoredTerms, number> = { token: 1, lockDuration: 2, name: 3, handOff: 4 };

/** The stored text's form. */
export function storedForm(stored: string): 'full' | 'compact' {
  return Array.isArray(JSON.parse(stored)) ? 'compact' : 'full';
}

/** The terms `stored` holds. */
export function storedTerms(stored: string): StoredTerms {
  const parsed = JSON.parse(stored) as unknown;
  if (!Array.isArray(parsed)) return parsed as StoredTerms;
  return {
    token: String(parsed[AT.token]),
    lockDuration: Number(parsed[AT.lockDuration]),
    name: String(parsed[AT.name]),
    handOff: String(parsed[AT.handOff]),
  };
}

/** `stored` with `change` written in, in the same form. */
export function editedTerms(stored: string, change: Partial<StoredTerms>): string {
  const parsed = JSON.parse(stored) as unknown;
  if (!Array.isArray(parsed)) return JSON.stringify({ ...(parsed as object), ...change });
  const out = [...parsed];
  for (const [k, v] of Object.entries(change)) out[AT[k as keyof StoredTerms]] = v;
  return JSON.stringify(out);
}
