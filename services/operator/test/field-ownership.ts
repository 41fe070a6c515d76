/**
 * FAKE API server support, for tests only: server-side apply's field ownership, reduced to what a
 * controller notices. Every write records which field manager last set each leaf field (maps are
 * walked; lists are atomic leaves, unlike the real server's list-map merge of e.g. containers).
 * An apply sets the fields in its configuration, removes the fields the same manager applied
 * before and no longer applies, and leaves every other manager's fields alone; applying a field
 * another manager set to a different value is a conflict unless forced (then ownership moves).
 * Ownership is kept beside the object, not in metadata.managedFields.
 */

/** Leaf path (JSON array of keys) → field manager. */
export type Owners = Map<string, string>;

const SYSTEM_METADATA = new Set([
  'name',
  'namespace',
  'generateName',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'managedFields',
]);

type Json = Record<string, unknown>;
const isMap = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** The object's user-settable leaf fields (status and system metadata excluded). */
export function leaves(obj: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const walk = (v: unknown, path: string[]) => {
    if (isMap(v) && Object.keys(v).length) {
      for (const [k, c] of Object.entries(v)) {
        if (path.length === 0 && (k === 'status' || k === 'apiVersion' || k === 'kind')) continue;
        if (path.length === 1 && path[0] === 'metadata' && SYSTEM_METADATA.has(k)) continue;
        walk(c, [...path, k]);
      }
    } else if (path.length) out.set(JSON.stringify(path), v);
  };
  walk(obj, []);
  return out;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A non-apply write (create, PUT, merge/JSON patch): the writer now owns what it changed. */
export function recordWrite(owners: Owners, before: unknown, after: unknown, manager: string): void {
  const b = before === undefined ? new Map<string, unknown>() : leaves(before);
  const a = leaves(after);
  for (const p of b.keys()) if (!a.has(p)) owners.delete(p);
  for (const [p, v] of a) if (!b.has(p) || !same(b.get(p), v)) owners.set(p, manager);
}

function setPath(obj: Json, path: string[], value: unknown): void {
  let o = obj;
  for (const k of path.slice(0, -1)) {
    if (!isMap(o[k])) o[k] = {};
    o = o[k] as Json;
  }
  o[path[path.length - 1]!] = value;
}

function deletePath(obj: Json, path: string[]): void {
  let o: unknown = obj;
  for (const k of path.slice(0, -1)) {
    if (!isMap(o)) return;
    o = o[k];
  }
  if (isMap(o)) delete o[path[path.length - 1]!];
}

const overlaps = (a: string[], b: string[]) => {
  const n = Math.min(a.length, b.length);
  return a.slice(0, n).every((k, i) => b[i] === k);
};

export type ApplyResult = { ok: true; object: Json } | { ok: false; conflicts: string[] };

export function applyConfiguration(
  current: Json,
  config: unknown,
  owners: Owners,
  manager: string,
  force: boolean,
): ApplyResult {
  const cfg = leaves(config);
  const cur = leaves(current);
  const taken: string[] = [];
  const conflicts: string[] = [];
  for (const [p, v] of cfg) {
    const path = JSON.parse(p) as string[];
    for (const [op, m] of owners) {
      if (m === manager || !overlaps(path, JSON.parse(op) as string[])) continue;
      if (op === p && same(cur.get(p), v)) continue; // same value: no conflict
      taken.push(op);
      conflicts.push(`conflict with "${m}": .${(JSON.parse(op) as string[]).join('.')}`);
    }
  }
  if (conflicts.length && !force) return { ok: false, conflicts };
  const next = structuredClone(current);
  for (const op of taken) {
    owners.delete(op);
    deletePath(next, JSON.parse(op) as string[]);
  }
  for (const [p, m] of owners) {
    if (m === manager && !cfg.has(p)) {
      owners.delete(p);
      deletePath(next, JSON.parse(p) as string[]);
    }
  }
  for (const [p, v] of cfg) {
    setPath(next, JSON.parse(p) as string[], structuredClone(v));
    owners.set(p, manager);
  }
  return { ok: true, object: next };
}
