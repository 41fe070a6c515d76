/**
 * JSON.parse that refuses numbers a JavaScript program cannot receive exactly: `1e400` parses to
 * Infinity (and would reach the program as null), an integer past 2^53 written as a number is
 * silently rounded. The reviver sees each number's source text, so a float such as `0.1` or `1e20`
 * passes and only integers that lose digits, or values that overflow, are refused.
 */
type LosslessParse = { ok: true; value: unknown } | { ok: false; source: string; key: string };

type SourceContext = { source?: string };

export function parseLosslessJson(text: string): LosslessParse {
  // Most answers hold no number a plain parse loses: parsed without the reviver (which V8 runs
  // with each value's source, 5-10x the plain parse: test/bench/README.md round 29 `par-calls`),
  // and parsed again with it only when a number came out infinite or an integer past 2^53 (every
  // value the reviver refuses does; some it passes, such as 1e20, do too: it gives the verdict).
  const value: unknown = JSON.parse(text);
  return mayBeLossy(value) ? parseWithSource(text) : { ok: true, value };
}

/** The source-reviver parse alone (every answer went through it before round 29; benches time it). */
export function parseWithSource(text: string): LosslessParse {
  let bad: { source: string; key: string } | undefined;
  const value = JSON.parse(text, ((key: string, v: unknown, context?: SourceContext) => {
    if (bad || typeof v !== 'number') return v;
    const source = context?.source ?? String(v);
    if (!Number.isFinite(v) || (/^-?\d+$/.test(source) && !Number.isSafeInteger(v))) bad = { source, key };
    return v;
  }) as (this: unknown, key: string, value: unknown) => unknown);
  return bad ? { ok: false, ...bad } : { ok: true, value };
}

/** A number in `value` that is infinite or an integer past 2^53 (a walk, not recursion: any depth). */
function mayBeLossy(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (!Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const item of Object.values(v)) stack.push(item);
    }
  }
  return false;
}

/** The refusal text: what the number was and how the App should send it instead. */
export function lossyNumberMessage(source: string, key: string): string {
  const where = key === '' ? '' : ` (at "${key}")`;
  return `the App's answer has a number JSON cannot carry exactly: ${source.slice(0, 40)}${where}; send it as a string`;
}
