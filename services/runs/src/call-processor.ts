/**
 * The gateway side of one binding call, in the order that makes "never sent twice" hold:
 * claim (atomic, per run and index) → policy → decision → markSent → App call → complete →
 * answer. An `allow` call's claim and markSent are one step (nothing to decide in between). The
 * answer carries the journal's `deliverySeq`, which the runner's replaying handler uses to deliver
 * outcomes in journal order. Any gateway replica may run it for any call.
 */
import { type ApprovalMode, type BindingOutcome, RUN_CODE_LIMITS, type SandboxMode } from '@islet/protocol';
import { JournalConflictError } from './call-journal.ts';
import type { DecisionStore } from './decision-store.ts';
import type { DecisionRecord } from './decision-types.ts';
import { idempotencyKeyFor, operationIdFor } from './operation-id.ts';
import type { CallJournal, CallSource, ClaimCall, CompletionEvent } from './types.ts';

/** `details.reason` of the AppCallFailed a program gets for a call sent before a crash whose outcome was lost. */
export const UNKNOWN_OUTCOME_REASON =
  'outcome unknown: the call was sent but its result was not recorded before a failure; it was not resent';

/** Label values of `islet_binding_calls_total{outcome}`. */
type CallOutcomeLabel =
  | 'result'
  | 'denied'
  | 'failed'
  | 'input_required'
  | 'replayed'
  | 'unknown'
  | 'mismatch'
  | 'suspended'
  | 'cancelled';

interface ProcessCallInput {
  run: { id: string; tenant: string; mode: SandboxMode; toolCallId: string; code: string };
  /** The execution's attempt number (`journal.nextAttempt` at execution start). */
  attempt: number;
  call: { index: number; binding: string; argsJson: string; source?: CallSource };
  /** The connection's policy for this tool. */
  policy: 'allow' | 'ask' | 'deny';
  /** How an `ask` waits: `stop` ends the execution and replays later; `hold` waits in place. */
  approval: ApprovalMode;
  /** Longest wait in place for a decision (the run's remaining budget), ms. Default: the run_code ceiling. */
  holdTimeoutMs?: number;
  /** The runner retries this call after losing the gateway that held it. */
  takeover?: boolean;
  /** The call's operation id when the caller derived it already (`operationIdFor(run.id, call.index)`). */
  operationId?: string;
  /** Performs the App call. Must not throw: App errors are `AppCallFailed` outcomes. */
  send: (ctx: { idempotencyKey: string; operationId: string; input?: unknown }) => Promise<BindingOutcome>;
  /**
   * Aborts a held decision's wait (the client went away); or what makes that signal when first
   * asked (the gateway's fast call path makes none for a call that does not wait).
   */
  signal?: AbortSignal | (() => AbortSignal);
  /** The run now waits for a decision (set status `Waiting`, publish the request on its event stream). */
  onDecisionNeeded?: (decision: DecisionRecord, created: boolean) => Promise<void>;
  /** A held decision was answered (set status back to `Running`). */
  onDecisionAnswered?: (decision: DecisionRecord) => Promise<void>;
  /** How long a duplicate delivery waits for the first handler's outcome, ms. Default 60000. */
  inFlightWaitMs?: number;
  /**
   * A call an earlier attempt sent but did not journal may still be finishing on a live gateway
   * (its runner died, not the gateway): wait up to this long for that outcome before reporting it
   * unknown, ms. Use the App call timeout. Not applied on a `takeover` (the handler is known gone).
   * Default 0.
   */
  unknownGraceMs?: number;
  /**
   * The event to append to the run's stream with the outcome, in the journal's `complete` step
   * (only when that step stores it; `ProcessedCall.eventAppended` says so).
   */
  eventFor?: (outcome: BindingOutcome, label: CallOutcomeLabel) => CompletionEvent;
  /**
   * A call claimed or sent before whose outcome was never journaled (`unknown`, `in-flight`):
   * `report` it as unknown (App calls: never sent twice), or `perform-again` (an operation that is
   * harmless twice: the runner's files calls). Default `report`.
   */
  unjournaled?: 'report' | 'perform-again';
}

interface ProcessedCall {
  outcome: BindingOutcome;
  /** `JSON.stringify(outcome)`, when this call journaled it (the text that was sealed). */
  outcomeJson?: string;
  /** Present when the outcome is journaled; the runner releases outcomes in this order. */
  deliverySeq?: number;
  label: CallOutcomeLabel;
  /** `eventFor`'s event was appended with the outcome. */
  eventAppended?: boolean;
}

/** `decisions`: needed for calls whose policy is `ask` (absent: the runner's files calls, always allowed). */
export function createCallProcessor(deps: { journal: CallJournal; decisions?: DecisionStore }) {
  const { journal } = deps;

  const journaled = async (
    input: ProcessCallInput,
    outcome: BindingOutcome,
    label: CallOutcomeLabel,
  ): Promise<ProcessedCall> => {
    const runId = input.run.id;
    const index = input.call.index;
    const event = input.eventFor?.(outcome, label);
    // Serialised once: sealed into the journal and, by the gateway, written into the runner's answer.
    const outcomeJson = JSON.stringify(outcome);
    const { deliverySeq, stored } = await journal.complete(runId, index, outcome, event, outcomeJson);
    if (stored) {
      const processed: ProcessedCall = { outcome, outcomeJson, deliverySeq, label };
      if (event) processed.eventAppended = true;
      return processed;
    }
    // Someone journaled first (a takeover raced a slow handler): the journal's outcome is the truth.
    const entry = await journal.get(runId, index);
    return { outcome: entry?.outcome ?? outcome, deliverySeq, label: 'replayed' };
  };

  const waitInFlight = async (input: ProcessCallInput): Promise<ProcessedCall> => {
    const got = await journal.waitForOutcome(input.run.id, input.call.index, {
      timeoutMs: input.inFlightWaitMs ?? 60_000,
    });
    if (got) return { outcome: got.outcome, deliverySeq: got.deliverySeq, label: 'replayed' };
    return {
      outcome: {
        type: 'error',
        name: 'AppCallFailed',
        message: 'the call is still being handled by another gateway',
        details: {
          reason: 'in flight elsewhere: no outcome yet',
          operationId: operationIdFor(input.run.id, input.call.index),
        },
      },
      label: 'failed',
    };
  };

  const labelOf = (outcome: BindingOutcome): CallOutcomeLabel => {
    if (outcome.type === 'result') return 'result';
    if (outcome.type === 'stop') return outcome.code === 'suspended' ? 'suspended' : 'cancelled';
    if (outcome.name === 'AppCallDenied') return 'denied';
    if (outcome.name === 'AppInputRequired') return 'input_required';
    return 'failed';
  };

  const denied = (input: ProcessCallInput, why: string): BindingOutcome => ({
    type: 'error',
    name: 'AppCallDenied',
    message: `${input.call.binding}: ${why}`,
    details: { operationId: operationIdFor(input.run.id, input.call.index) },
  });

  async function process(input: ProcessCallInput): Promise<ProcessedCall> {
    const { run, call } = input;
    // An allowed call is sent right after its claim, so the two are one journal step: from there
    // on a crash makes its outcome `unknown`, exactly as with a separate markSent.
    const sendNow = input.policy === 'allow';
    const operationId = input.operationId ?? operationIdFor(run.id, call.index);
    // The claim's call as one object literal: a spread of `call` and of a conditional `{}` apiece made
    // three objects a call, a hundred-call batch's three hundred (round 47 `gateway-cpu`).
    const claimed: ClaimCall = {
      index: call.index,
      binding: call.binding,
      argsJson: call.argsJson,
      operationId,
    };
    if (call.source !== undefined) claimed.source = call.source;
    if (input.takeover) claimed.takeover = true;
    if (sendNow) claimed.sendNow = true;
    const claim = await journal.claim(run.id, input.attempt, claimed);
    // Performed again (see `unjournaled`): straight on to the send, with no new markSent.
    const again =
      input.unjournaled === 'perform-again' && (claim.kind === 'unknown' || claim.kind === 'in-flight');
    if (!again)
      switch (claim.kind) {
        case 'done':
          return { outcome: claim.outcome, deliverySeq: claim.deliverySeq, label: 'replayed' };
        case 'mismatch':
          return {
            outcome: {
              type: 'stop',
              code: 'replay-mismatch',
              message: `call ${call.index} is ${call.binding} with other arguments or binding than last time (${claim.expected.binding})`,
            },
            label: 'mismatch',
          };
        case 'superseded':
          return {
            outcome: {
              type: 'stop',
              code: 'cancelled',
              message: 'a newer execution of this run has started',
            },
            label: 'cancelled',
          };
        case 'in-flight':
          return waitInFlight(input);
        case 'unknown': {
          if (!input.takeover && (input.unknownGraceMs ?? 0) > 0) {
            const got = await journal.waitForOutcome(run.id, call.index, {
              timeoutMs: input.unknownGraceMs ?? 0,
              pollMs: 100,
            });
            if (got) return { outcome: got.outcome, deliverySeq: got.deliverySeq, label: 'replayed' };
          }
          return journaled(
            input,
            {
              type: 'error',
              name: 'AppCallFailed',
              message: `${call.binding}: ${UNKNOWN_OUTCOME_REASON}`,
              details: { reason: UNKNOWN_OUTCOME_REASON, operationId: operationIdFor(run.id, call.index) },
            },
            'unknown',
          );
        }
        case 'new':
          break;
      }

    let appInput: unknown;
    if (input.policy === 'deny') {
      return journaled(input, denied(input, 'the policy denies this call'), 'denied');
    }
    if (input.policy === 'ask') {
      const decisions = deps.decisions;
      if (!decisions) throw new Error('a call whose policy is ask needs the decision store');
      let decision = await decisions.get(run.id, call.index);
      if (!decision || decision.state === 'pending') {
        const source = call.source;
        const requested = await decisions.request({
          tenant: run.tenant,
          mode: run.mode,
          runId: run.id,
          index: call.index,
          toolCallId: run.toolCallId,
          code: run.code,
          approval: input.approval,
          call: {
            connectionId: source?.connectionId ?? call.binding.split('.')[0] ?? '',
            tool: source?.name ?? call.binding.split('.').slice(1).join('.'),
            arguments: JSON.parse(call.argsJson) as unknown,
          },
        });
        decision = requested.decision;
        if (decision.state === 'pending') {
          await input.onDecisionNeeded?.(decision, requested.created);
          if (input.approval === 'stop') {
            return {
              outcome: {
                type: 'stop',
                code: 'suspended',
                message: `call ${call.index} (${call.binding}) waits for a decision`,
              },
              label: 'suspended',
            };
          }
          const waitOptions: { timeoutMs: number; signal?: AbortSignal } = {
            timeoutMs: input.holdTimeoutMs ?? RUN_CODE_LIMITS.maxTimeoutMs,
          };
          if (input.signal)
            waitOptions.signal = typeof input.signal === 'function' ? input.signal() : input.signal;
          const answered = await decisions.waitForAnswer(run.id, call.index, waitOptions);
          if (!answered || answered.state === 'pending') {
            return {
              outcome: {
                type: 'stop',
                code: 'cancelled',
                message: 'no decision arrived while the call waited',
              },
              label: 'cancelled',
            };
          }
          decision = answered;
          await input.onDecisionAnswered?.(decision);
        }
      }
      if (decision.state === 'denied') {
        const why = decision.answer?.reason;
        return journaled(
          input,
          denied(
            input,
            why ? `a decider did not allow the call: ${why}` : 'a decider did not allow the call',
          ),
          'denied',
        );
      }
      if (decision.state === 'expired') {
        return {
          outcome: { type: 'stop', code: 'cancelled', message: 'the decision expired' },
          label: 'cancelled',
        };
      }
      appInput = decision.answer?.input;
    }

    if (!sendNow && claim.kind === 'new') {
      try {
        await journal.markSent(run.id, call.index, claim.token);
      } catch (error) {
        if (error instanceof JournalConflictError) return waitInFlight(input);
        throw error;
      }
    }
    const sendCtx: { idempotencyKey: string; operationId: string; input?: unknown } = {
      idempotencyKey: idempotencyKeyFor(run.id, call.index),
      operationId,
    };
    if (appInput !== undefined) sendCtx.input = appInput;
    const outcome = await input.send(sendCtx);
    return journaled(input, outcome, labelOf(outcome));
  }

  return { process };
}
