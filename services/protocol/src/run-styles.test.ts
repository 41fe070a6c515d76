import { describe, expect, it } from 'vitest';
import { RUN_CODE_LIMITS, resolveApproval, resolveTimeBudget, runCodeTimeoutMs } from './run-styles.ts';

describe('approval and time-budget defaults', () => {
  it('holds run_code-style calls and stops Code Mode runs unless the request or tenant says otherwise', () => {
    expect(resolveApproval('run_code')).toBe('hold');
    expect(resolveApproval('code-mode')).toBe('stop');
    expect(resolveApproval('code-mode', undefined, 'hold')).toBe('hold');
    expect(resolveApproval('run_code', 'stop', 'hold')).toBe('stop');
    expect(resolveTimeBudget('run_code')).toBe('elapsed');
    expect(resolveTimeBudget('code-mode')).toBe('excluding-binding-waits');
    expect(resolveTimeBudget('code-mode', 'elapsed')).toBe('elapsed');
  });
});

describe('run_code limits', () => {
  it('defaults and caps timeoutMs in one place, a setup ceiling only lowering it', () => {
    expect(RUN_CODE_LIMITS).toEqual({
      defaultTimeoutMs: 120_000,
      maxTimeoutMs: 600_000,
      memoryMb: 512,
      outputBytes: 67_108_864,
    });
    expect(runCodeTimeoutMs(undefined)).toBe(120_000);
    expect(runCodeTimeoutMs(10_000_000)).toBe(600_000);
    expect(runCodeTimeoutMs(5000, 2000)).toBe(2000);
    expect(runCodeTimeoutMs(undefined, 1_000_000)).toBe(120_000);
  });
});
