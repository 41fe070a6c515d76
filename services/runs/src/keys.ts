/**
 * The run package's own key table: the keys it keeps beside core's `keys` (which names the run
 * record, events and in-flight indexes), with a prefix (default `islet:`) so tests and a second
 * installation can share a Redis. Same slot groups as core's keys.ts: per run `{<runId>}`, per
 * tenant `{t:<tenant>}`, one global expiry index.
 */
import { tenantTag } from '@islet/core';

export function journalKeys(prefix = 'islet:') {
  return {
    /** HASH call index → journal entry (call-journal.ts). */
    journal: (runId: string) => `${prefix}journal:{${runId}}`,
    /** HASH call index → decision (decision-store.ts; -1 = a wider-access request). */
    decisions: (runId: string) => `${prefix}decisions:{${runId}}`,
    /** LIST a waiter BLPOPs until the decision is answered. */
    decisionAnswered: (runId: string, index: number) => `${prefix}decisions:{${runId}}:answered:${index}`,
    /** ZSET `<runId>\n<index>` → requested-at: the tenant's pending decisions. */
    tenantDecisions: (tenant: string) => `${prefix}tenant:${tenantTag(tenant)}:decisions`,
    /** ZSET `<runId>\n<index>` → expires-at, every tenant's (global single key: one ZADD/ZREM at a time). */
    decisionsDue: () => `${prefix}decisions:due`,
    /** STRING: the tenant's run policy (run-policy-store.ts). */
    runPolicy: (tenant: string) => `${prefix}tenant:${tenantTag(tenant)}:run-policy`,
  };
}
