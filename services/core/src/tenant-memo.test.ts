import { describe, expect, it } from 'vitest';
import { keys } from './keys.ts';
import { TENANT_MEMO_MAX, tenantMemo } from './tenant-memo.ts';

describe('a per-tenant memo of key names', () => {
  it('makes a tenant’s value once a step, and again (equal) when the step moves on or comes back', () => {
    let made = 0;
    const rate = tenantMemo((tenant, window) => {
      made++;
      return keys.rateWindow(tenant, window);
    });
    expect(rate('t1', 5)).toBe(keys.rateWindow('t1', 5));
    expect(rate('t1', 5)).toBe(keys.rateWindow('t1', 5));
    expect(made).toBe(1);
    expect(rate('t2', 5)).toBe(keys.rateWindow('t2', 5));
    expect(made).toBe(2);
    // The next window: its own name, made once; the one before, asked again, is made again.
    expect(rate('t1', 6)).toBe(keys.rateWindow('t1', 6));
    expect(rate('t1', 6)).toBe(keys.rateWindow('t1', 6));
    expect(made).toBe(3);
    expect(rate('t1', 5)).toBe(keys.rateWindow('t1', 5));
    expect(made).toBe(4);
    // Without a step: one value a tenant.
    const names = tenantMemo((tenant) => Object.freeze({ inFlight: keys.inFlight(tenant) }));
    expect(names('t1')).toBe(names('t1'));
    expect(names('t1')).toEqual({ inFlight: keys.inFlight('t1') });
  });

  it(`keeps at most ${TENANT_MEMO_MAX} tenants: past them it forgets its oldest, made again equal`, () => {
    let made = 0;
    const memo = tenantMemo((tenant) => {
      made++;
      return Object.freeze({ inFlight: keys.inFlight(tenant) });
    });
    const first = memo('bound-0');
    for (let i = 1; i < TENANT_MEMO_MAX; i++) memo(`bound-${i}`);
    // Full, nothing dropped yet: every tenant asked again is the same value, made once.
    expect(memo('bound-0')).toBe(first);
    expect(made).toBe(TENANT_MEMO_MAX);
    // One tenant more: the oldest are forgotten (no map grows past the bound).
    memo(`bound-${TENANT_MEMO_MAX}`);
    const again = memo('bound-0');
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    expect(made).toBe(TENANT_MEMO_MAX + 2);
    // A smaller bound, as given.
    const small = tenantMemo((tenant) => ({ tenant }), 2);
    const a = small('a');
    small('b');
    expect(small('a')).toBe(a);
    small('c');
    expect(small('a')).not.toBe(a);
  });
});
