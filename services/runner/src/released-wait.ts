/**
 * The wait of a released run (call-parking.ts): it holds no slot and no isolate while its calls'
 * requests are still open, and replays from its journal once all of them were answered.
 */
import { deadlineMessage, type RunOutcome } from '@islet/engine';
import type { CallParking } from './call-parking.ts';

/**
 * A released run waits for its calls' answers (holding no slot, no isolate), within its budget:
 * an elapsed budget runs on (a deadline while waiting ends the run as the engine would, with the
 * output printed so far); one that excludes binding waits does not count them. 'answered' when
 * every call has its journaled outcome; 'interrupted' on a cancel or a hand-back; else the
 * outcome to end the run with.
 */
export async function waitReleased(
  job: { cancel: AbortSignal; handBack: AbortSignal },
  parking: CallParking,
  parked: RunOutcome,
  deadlineAt: number | undefined,
  timeoutMs: number | null | undefined,
): Promise<'answered' | 'interrupted' | RunOutcome> {
  const signal = AbortSignal.any([job.cancel, job.handBack]);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const outcome = await Promise.race([
    parking.settled().then(() => 'answered' as const),
    new Promise<'interrupted'>((resolve) => {
      onAbort = () => resolve('interrupted');
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }),
    ...(deadlineAt !== undefined
      ? [
          new Promise<'deadline'>((resolve) => {
            timer = setTimeout(() => resolve('deadline'), Math.max(0, deadlineAt - Date.now()));
          }),
        ]
      : []),
  ]);
  clearTimeout(timer);
  if (onAbort) signal.removeEventListener('abort', onAbort);
  const base: RunOutcome = { ...parked };
  delete base.stop;
  if (outcome === 'interrupted') {
    if (job.handBack.aborted && !job.cancel.aborted) return 'interrupted';
    return { ...base, status: 'failed', failure: { kind: 'abort', message: 'the run was aborted' } };
  }
  if (outcome === 'deadline')
    return {
      ...base,
      status: 'failed',
      failure: { kind: 'timeout', message: deadlineMessage(timeoutMs ?? 0) },
    };
  return 'answered';
}
