/**
 * A submit's refused admission as its problem (runs-service.ts `create`, which calls this right
 * after the admission). Moved out of runs-service.ts (a pure move).
 */

import type { AdmissionRateCount, AdmissionStorage } from '@islet/runs';
import { rateLimitedProblem } from './auth.ts';
import { HttpProblem } from './problem-reply.ts';
import { storageQuotaProblem } from './storage-quota.ts';

/** Throws the problem of a refused admission (`admitted` not `'created'`); returns otherwise. */
export function throwIfRefused(
  admitted: string,
  session: string,
  rate: AdmissionRateCount | undefined,
  limit: number,
  admissionStorage: AdmissionStorage,
): void {
  if (admitted === 'over-storage')
    throw storageQuotaProblem(admissionStorage.usedBytes ?? 0, admissionStorage.limitBytes);
  // A session belongs to the principal that opened it (its first run). Another principal's run
  // in it is refused as if the session did not exist (walls do not tell what is behind them).
  if (admitted === 'session-taken') throw new HttpProblem('not-found', `no session ${session}`);
  // A retry took the key over while this request stalled before storing its run: the retry's
  // run is the one (this request's caller has retried and holds its answer).
  if (admitted === 'superseded')
    throw new HttpProblem(
      'idempotency-conflict',
      'a retry with this Idempotency-Key was accepted while this request waited; it is the run',
    );
  if (admitted === 'rate-limited' && rate) {
    rate.refused = true;
    throw rateLimitedProblem(rate.limit);
  }
  if (admitted === 'over-quota')
    throw new HttpProblem(
      'quota-exceeded',
      `tenant has ${limit} runs in flight, the most it may have`,
      { limit },
      { 'retry-after': '1' },
    );
}
