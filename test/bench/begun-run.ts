/**
 * A waited trivial run created and its attempt begun through the stores, the state the end
 * benches (end-push-cost, end-script-cost, journal-end-cost) capture an end script from.
 */

import type { createCallJournal, createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { FINISH_RUN } from '../../services/runs/src/run-store-scripts.ts';
import { PROGRAM } from './baselines.ts';

export async function begunRun(
  runs: ReturnType<typeof createRunStore>,
  journal: ReturnType<typeof createCallJournal>,
  id: string,
  createdAt: number,
  description = 'Measure a trivial program',
) {
  const run = runFixture(id, {
    createdAt,
    tenant: 'dev',
    session: 'bench',
    code: PROGRAM,
    description,
    pushEnd: true,
  });
  await runs.create(run);
  await journal.beginAttempt(run.id, `islet:run:{${run.id}}`, runs.attemptStartEvent(run.id));
  return run;
}

/**
 * `run` ended Completed (value 12) through the run store, its end script's call captured as the
 * store sends it (core lua-script.ts: a command of its own through `sendCommand`, EVALSHA or EVAL
 * with the source after a NOSCRIPT): the KEYS and ARGV a bench replays.
 */
export async function capturedEnd(
  redis: Redis,
  runs: ReturnType<typeof createRunStore>,
  run: Awaited<ReturnType<typeof begunRun>>,
  createdAt: number,
  /** `value`: the program's result (default 12); `timings: false`: an end without a runner's stamps. */
  over: { bindingCalls?: number; sentNoCall?: boolean; value?: number; timings?: false } = {},
): Promise<{ keys: string[]; args: (string | number)[] }> {
  let captured: (string | number)[] = [];
  const sendCommand = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string; args: (string | number)[] }) => {
    const head = command.args[0];
    if (head === FINISH_RUN.sha || head === FINISH_RUN.source) captured = command.args.slice();
    return sendCommand(command as never);
  }) as typeof redis.sendCommand;
  // A runner's stamps as the end writes them (run-store-args.ts `timingsText`).
  const at = (ms: number) => createdAt + ms + 0.123;
  try {
    await runs.finish(run, {
      status: 'Completed',
      result: { _tag: 'Completed', value: over.value ?? 12, logs: [] },
      text: String(over.value ?? 12),
      ...(over.timings === false
        ? {}
        : {
            timings: {
              enqueued: at(0),
              fetched: at(1),
              pickedUp: at(2),
              engineCalled: at(3),
              engineReturned: at(4),
              endSent: at(5),
            },
          }),
      usage: { bindingCalls: over.bindingCalls ?? 0, cpuMs: 1 },
      ...(over.sentNoCall ? { sentNoCall: true } : {}),
    });
  } finally {
    redis.sendCommand = sendCommand;
  }
  if (captured.length === 0) throw new Error('the end script call was not captured');
  const [, numKeys, ...rest] = captured;
  return { keys: rest.slice(0, Number(numKeys)).map(String), args: rest.slice(Number(numKeys)) };
}
