/**
 * A run's status transitions apart from its end: the transition script (a move to Running or
 * Waiting, and a Cluster's final status), `setStatus` and `requestCancel`. Moved out of
 * run-store.ts (a pure move), which puts `setStatus` and `requestCancel` in the store and calls
 * `transition` directly for a Cluster's end.
 */

import { channels, keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { journalKeys } from './keys.ts';
import { TRANSITION } from './run-store-scripts.ts';

const RUN_KEYS = journalKeys();

export function createRunTransitions(
  redis: Redis,
  shared: { maxEvents: string; retention: string; seal: (v: unknown) => string },
) {
  const { maxEvents, retention, seal } = shared;

  async function transition(
    run: { id: string; tenant: string; pushEnd?: boolean },
    fields: Record<string, string>,
    event: { type: string; data: Record<string, unknown> },
    noDecisions?: boolean,
  ): Promise<boolean> {
    const flat = Object.entries({ ...fields, updatedAt: String(Date.now()) }).flat();
    // Tagged `running`: a move to Running (a decision allowed, a call answered) ends no
    // `Prefer: wait` (that waits for a final status or Waiting), so it goes on the progress
    // channel, which only gateways with an SSE reader subscribe to. An attempt's start is
    // tagged and sent the same way (attemptStartEvent).
    const running = fields.status === 'Running';
    const message = running ? `${run.id} running` : run.id;
    const channel = running ? channels.runProgress : channels.runEvents;
    const res = await TRANSITION.run(
      redis,
      // The journal's key with its default prefix, the one the gateway and runner use: read for a
      // pushed end, and expired with the record and events at any end (a one-seal `call` event's
      // data is read from it: call-event-reads.ts). The decisions' likewise: expired at an end
      // (round 48), never at a move to Running or Waiting; left out (no EXPIRE) when the caller
      // knows the run has none (`noDecisions`: the run store's finish, run-store-args.ts `endModeArg`).
      noDecisions
        ? [keys.run(run.id), keys.runEvents(run.id), RUN_KEYS.journal(run.id)]
        : [keys.run(run.id), keys.runEvents(run.id), RUN_KEYS.journal(run.id), RUN_KEYS.decisions(run.id)],
      (
        [message, channel, event.type, seal(event.data), maxEvents, retention, run.pushEnd ? '1' : '0'] as (
          | string
          | number
        )[]
      ).concat(flat),
    );
    return res === 1;
  }

  return {
    transition,
    /** Moves a run to Running or Waiting unless it already ended. */
    async setStatus(
      run: { id: string; tenant: string },
      status: 'Running' | 'Waiting',
      data: Record<string, unknown> = {},
    ) {
      return transition(run, { status }, { type: 'status', data: { status, ...data } });
    },

    async requestCancel(id: string): Promise<void> {
      await redis.multi().hset(keys.run(id), 'cancelRequested', '1').publish(channels.cancel, id).exec();
    },
  };
}
