/**
 * One execution of a run on the runner: take a fresh attempt number, load the journal, run the
 * engine with the run's fixed clock and seed and a replaying handler in front of the gateway.
 * Every execution of a run — first, after a decision, after any crash — goes through here, so
 * recovery and replay are the same code path.
 */
import type { BindingCall, Engine, ExecuteOptions, RunOutcome } from '@islet/engine';
import { createReplayingHandler, type LiveOutcome } from './replaying-handler.ts';
import type { CallJournal } from './types.ts';

export interface ExecuteWithReplayInput {
  runId: string;
  code: string;
  /** Engine options without `onCall`; must carry the run's stored `clockMs` and `randomSeed`. */
  options: Omit<ExecuteOptions, 'onCall'> & { clockMs: number; randomSeed: string };
  /** Sends a call the journal cannot answer to a gateway, with this execution's attempt. */
  live: (call: BindingCall, attempt: number) => Promise<LiveOutcome>;
  /** Stall guard of the sequencer, ms. Default: the run's time budget, else 120000. */
  stallMs?: number;
  onEvent?: (event: 'replayed' | 'mismatch' | 'live' | 'stall-skip') => void;
  /** Called with the attempt number once it is taken (e.g. to log it or fence the job). */
  onAttempt?: (attempt: number) => void;
}

export interface ExecutionResult {
  outcome: RunOutcome;
  attempt: number;
  stats: { replayed: number; live: number; mismatches: number; stallSkips: number };
}

export async function executeWithReplay(
  deps: { engine: Engine; journal: CallJournal },
  input: ExecuteWithReplayInput,
): Promise<ExecutionResult> {
  const attempt = await deps.journal.nextAttempt(input.runId);
  input.onAttempt?.(attempt);
  const entries = await deps.journal.list(input.runId);
  const budget = input.options.limits?.timeoutMs;
  const replay = createReplayingHandler({
    journal: entries,
    live: (call) => input.live(call, attempt),
    stallMs: input.stallMs ?? (typeof budget === 'number' && budget > 0 ? budget : 120_000),
    ...(input.onEvent ? { onEvent: input.onEvent } : {}),
  });
  try {
    const outcome = await deps.engine.execute(input.code, { ...input.options, onCall: replay.handler });
    return { outcome, attempt, stats: replay.stats() };
  } finally {
    replay.close();
  }
}
