/**
 * One-time migration of a Deployment's field ownership. Operator versions that created the
 * Deployment with a plain POST left an `Update` managedFields entry for the islet-operator manager;
 * fields in it are never removed by a later server-side apply that stops setting them (switching
 * the workspace from an emptyDir to a claim then fails validation on every apply, with both volume
 * sources set). Moving that entry's fields into the manager's `Apply` entry makes the next apply
 * own, and so prune, them: the upgrade client-go's csaupgrade performs for kubectl.
 */
import type { V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { FIELD_MANAGER } from './kube.ts';

type FieldSet = Record<string, unknown>;

function union(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      prev && typeof prev === 'object' && v && typeof v === 'object'
        ? union(prev as FieldSet, v as FieldSet)
        : v;
  }
  return out;
}

const isOurUpdate = (e: V1ManagedFieldsEntry) =>
  e.manager === FIELD_MANAGER && e.operation === 'Update' && !e.subresource;

/** The managedFields to write, or undefined when there is nothing to migrate. */
export function migrateManagedFields(
  entries: readonly V1ManagedFieldsEntry[] | undefined,
): V1ManagedFieldsEntry[] | undefined {
  const list = entries ?? [];
  const updates = list.filter(isOurUpdate);
  if (!updates.length) return undefined;
  const applyIdx = list.findIndex((e) => e.manager === FIELD_MANAGER && e.operation === 'Apply');
  const base: V1ManagedFieldsEntry =
    applyIdx >= 0
      ? { ...(list[applyIdx] as V1ManagedFieldsEntry) }
      : {
          manager: FIELD_MANAGER,
          operation: 'Apply',
          apiVersion: updates[0]?.apiVersion ?? 'apps/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: {},
          time: updates[0]?.time,
        };
  let fields = (base.fieldsV1 ?? {}) as FieldSet;
  for (const u of updates) fields = union(fields, (u.fieldsV1 ?? {}) as FieldSet);
  base.fieldsV1 = fields;
  const out: V1ManagedFieldsEntry[] = [];
  for (const [i, e] of list.entries()) {
    if (isOurUpdate(e)) continue;
    out.push(i === applyIdx ? base : e);
  }
  if (applyIdx < 0) out.push(base);
  return out;
}
