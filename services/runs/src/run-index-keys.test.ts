import { keys } from '@islet/core';
import { describe, expect, it } from 'vitest';
import { RUN_INDEX_KEYS_MEMO_MAX, runIndexKeys } from './run-index-writes.ts';

const derived = (tenant: string) => ({
  runs: keys.indexRuns(tenant),
  summaries: keys.indexRunSummaries(tenant),
  ended: keys.indexRunsEnded(tenant),
  sessions: keys.indexSessions(tenant),
  sessionStats: keys.indexSessionStats(tenant),
  feed: keys.tenantFeed(tenant),
  pending: keys.indexPending(tenant),
});

describe("a tenant's index keys", () => {
  it('are made once a tenant (the same frozen names on every call), equal to their derivation', () => {
    const first = runIndexKeys('memo-a');
    // Until round 37 (`end-spreads`) each call built the seven names and their object afresh.
    expect(runIndexKeys('memo-a')).toBe(first);
    expect(first).toEqual(derived('memo-a'));
    expect(Object.isFrozen(first)).toBe(true);
    expect(runIndexKeys('memo-b')).toEqual(derived('memo-b'));
    expect(runIndexKeys('memo-b').runs).not.toBe(first.runs);
  });

  it('are kept for a bounded number of tenants: past it, the memo starts again', () => {
    const first = runIndexKeys('bound-0');
    for (let i = 1; i <= RUN_INDEX_KEYS_MEMO_MAX; i++) runIndexKeys(`bound-${i}`);
    const again = runIndexKeys('bound-0');
    expect(again).not.toBe(first);
    expect(again).toEqual(derived('bound-0'));
  });
});
