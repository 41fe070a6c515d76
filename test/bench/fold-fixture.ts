/**
 * A run of the fold benches (fold-cost.ts, fold-parts.ts, fold-time.ts): one tenant (`dev`), one
 * session, the trivial program, its end pushed; named `fold-run-<n>` padded so the runs sort in order.
 */
import { runFixture } from '@islet/testkit';
import { PROGRAM } from './baselines.ts';

export function foldRun(n: number, pad = 5) {
  return runFixture(`fold-run-${String(n).padStart(pad, '0')}`, {
    createdAt: Date.now(),
    tenant: 'dev',
    session: 'bench',
    code: PROGRAM,
    description: 'Measure a trivial program',
    pushEnd: true,
  });
}
