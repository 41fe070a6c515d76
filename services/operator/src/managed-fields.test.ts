import type { V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { migrateManagedFields } from './managed-fields.ts';

const update: V1ManagedFieldsEntry = {
  manager: 'islet-operator',
  operation: 'Update',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: {
    'f:spec': {
      'f:template': { 'f:spec': { 'f:volumes': { 'k:{"name":"workspace"}': { 'f:emptyDir': {} } } } },
    },
  },
};
const apply: V1ManagedFieldsEntry = {
  manager: 'islet-operator',
  operation: 'Apply',
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:spec': { 'f:replicas': {} } },
};
const kcm: V1ManagedFieldsEntry = {
  manager: 'kube-controller-manager',
  operation: 'Update',
  apiVersion: 'apps/v1',
  subresource: 'status',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:status': {} },
};

describe('migrateManagedFields', () => {
  it('moves the operator’s Update fields into its Apply entry and keeps everyone else’s', () => {
    expect(migrateManagedFields([update, apply, kcm])).toEqual([
      {
        ...apply,
        fieldsV1: {
          'f:spec': {
            'f:replicas': {},
            'f:template': { 'f:spec': { 'f:volumes': { 'k:{"name":"workspace"}': { 'f:emptyDir': {} } } } },
          },
        },
      },
      kcm,
    ]);
  });

  it('turns a lone Update entry into an Apply entry', () => {
    const out = migrateManagedFields([update]);
    expect(out).toEqual([{ ...update, operation: 'Apply', time: undefined }]);
  });

  it('has nothing to do once migrated, or for other managers’ Update entries', () => {
    expect(migrateManagedFields([apply, kcm])).toBeUndefined();
    expect(migrateManagedFields([{ ...update, manager: 'kubectl-rollout' }])).toBeUndefined();
    expect(migrateManagedFields(undefined)).toBeUndefined();
  });
});
