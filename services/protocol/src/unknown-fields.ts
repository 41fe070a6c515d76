/**
 * Unknown request fields are refused, never ignored: a `timeout` silently dropped runs with the
 * default budget, a `language: "python"` silently dropped runs the code as JavaScript. The refusal
 * names each field and, where a known field is close (case, `_`/`-`, a prefix, a typo), says which
 * one was meant; `hints` carry what spelling cannot find (a field that belongs to another endpoint).
 */

export interface UnknownField {
  /** Dotted path of the field, as the request wrote it. */
  path: string;
  /** A known field it is probably meant to be. */
  suggestion?: string;
  /** Why, when the field belongs elsewhere. */
  hint?: string;
}

const normal = (s: string) => s.toLowerCase().replace(/[_-]/g, '');

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]!;
}

/** The known field `name` most likely means, or undefined when none is close. */
export function closestField(name: string, known: readonly string[]): string | undefined {
  const n = normal(name);
  if (n.length === 0) return undefined;
  let best: { field: string; score: number } | undefined;
  for (const field of known) {
    const k = normal(field);
    let score: number;
    if (k === n) score = 0;
    else if (n.length >= 4 && (k.startsWith(n) || n.startsWith(k))) score = 1;
    else {
      const d = distance(n, k);
      // About one edit in four characters past the first: `descripton` → `description`, not `mode` → `code`.
      if (d > Math.floor((Math.min(n.length, k.length) - 1) / 4)) continue;
      score = 1 + d;
    }
    if (!best || score < best.score) best = { field, score };
  }
  return best?.field;
}

/** The fields of `body` not in `known` (top level), each with its suggestion or hint. */
export function unknownFieldsOf(
  body: unknown,
  known: readonly string[],
  hints: Readonly<Record<string, string>> = {},
  prefix = '',
): UnknownField[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const out: UnknownField[] = [];
  // Indexed: every submit's fields (a `for … of` the JIT has not optimized allocates an iterator
  // result a field).
  const keys = Object.keys(body);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (known.includes(key)) continue;
    const hint = Object.hasOwn(hints, key) ? hints[key] : undefined;
    const suggestion = hint ? undefined : closestField(key, known);
    out.push({ path: prefix + key, ...(suggestion ? { suggestion } : {}), ...(hint ? { hint } : {}) });
  }
  return out;
}

/** `unknown field "timeout" (did you mean "timeoutMs"?)`, one clause per field. */
export function unknownFieldsMessage(fields: readonly UnknownField[]): string {
  return fields
    .map((f) => {
      const head = `unknown field "${f.path}"`;
      if (f.hint) return `${head}: ${f.hint}`;
      return f.suggestion ? `${head} (did you mean "${f.suggestion}"?)` : head;
    })
    .join('; ');
}
