/**
 * A trivial program's stored run, Completed, for probes that build its record or answer without a
 * stack (end-splice-count, waited-reply-count): the same fields and times on every side, so two
 * sides' bodies compare byte for byte.
 */
import type { StoredRun } from '../../services/runs/src/index.ts';

export const BENCH_RUN_ID = '0b6f3a52-8d4e-4c1e-9a55-3f1d2c7e9b10';

/** The stored run with `more` (a result and its text) on top. */
export function benchStoredRun(more: Record<string, unknown> = {}): StoredRun {
  return {
    id: BENCH_RUN_ID,
    tenant: 'acme',
    session: 'bench-session',
    turn: 'bench-turn',
    callId: 'bench-call',
    status: 'Completed',
    mode: 'isolate',
    code: 'return { ok: true }',
    description: 'Measure a trivial program',
    request: {
      connections: [],
      bindings: [],
      style: 'run_code',
      limits: { timeoutMs: 30000, memoryMb: 128, outputBytes: 65536, outputCap: 'shared' },
    },
    createdAt: 1765130000000,
    updatedAt: 1765130000004,
    attempts: 1,
    cancelRequested: false,
    clockMs: 1765130000000,
    seed: BENCH_RUN_ID,
    ...more,
  } as unknown as StoredRun;
}
