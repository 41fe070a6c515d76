/**
 * The runner's read of a hand-off member before round 30 (handoff-store.ts turned msgpackr's
 * `unpack` of it into Redis's answer of the Lua value): the reference handed-decode.ts is tested
 * against (handed-decode.test.ts) and timed against (test/bench/handed-decode-cost.ts).
 */
export function asReply(v: unknown): unknown {
  if (v === false || v === null || v === undefined) return null;
  if (v === true) return 1;
  if (typeof v === 'number') return Math.trunc(v);
  if (Array.isArray(v)) {
    let n = 0;
    for (; n < v.length; n++) {
      const e: unknown = v[n];
      if (e === null || e === undefined) break;
      v[n] = asReply(e);
    }
    v.length = n;
    return v;
  }
  if (v instanceof Map || (typeof v === 'object' && !(v instanceof Uint8Array))) {
    const get = (i: number): unknown =>
      v instanceof Map ? (v.get(i) ?? v.get(String(i))) : (v as Record<string, unknown>)[String(i)];
    const out: unknown[] = [];
    for (let i = 1; ; i++) {
      const e = get(i);
      if (e === null || e === undefined || e === false) break;
      out.push(asReply(e));
    }
    return out;
  }
  if (v instanceof Uint8Array) return Buffer.from(v).toString();
  return v;
}
