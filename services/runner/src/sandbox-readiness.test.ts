import { describe, expect, it } from 'vitest';
import { sandboxReadiness } from './sandbox-readiness.ts';

describe('sandboxReadiness', () => {
  it('is ready when every mode meets the requirement', () => {
    expect(sandboxReadiness('full', [{ mode: 'read-only', enforcement: 'full' }])).toEqual({ ready: true });
    expect(sandboxReadiness('partial', [{ mode: 'read-only', enforcement: 'partial' }])).toEqual({
      ready: true,
    });
  });

  it('is not ready with partial enforcement when full is required, naming the modes', () => {
    const r = sandboxReadiness('full', [
      { mode: 'read-only', enforcement: 'full' },
      { mode: 'workspace-write', enforcement: 'partial' },
    ]);
    expect(r).toEqual({
      ready: false,
      reason:
        'sandbox enforcement below the required full (workspace-write: partial); set ISLET_SANDBOX_ENFORCEMENT_REQUIRED=partial to accept it',
    });
  });

  it('is never ready with no enforcement at all', () => {
    expect(sandboxReadiness('partial', [{ mode: 'read-only', enforcement: 'none' }]).ready).toBe(false);
  });
});
