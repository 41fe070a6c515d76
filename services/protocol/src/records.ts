/**
 * The code-run record as Code Mode's "Read code runs" shows it, plus `text` (the run_code result
 * text), and how a run_code failure kind maps onto a Code Mode status and reason.
 *
 * Kind → reason (status Failed unless said):
 *   exception            → Error
 *   timeout              → Timeout
 *   abort                → Cancelled   (status Cancelled: a stopped run reports as an abort)
 *   worker-exit + memory → Memory      (the isolate or its process ran out of memory)
 *   worker-exit          → Unavailable (the process died under the run: Islet could not run it)
 *   invalid-output       → Error       (the program returned something that is not plain data)
 *   output-limit         → OutputTooLarge
 *   protocol             → Error       (the program's traffic was malformed or too heavy)
 *   sandbox-unavailable  → Unavailable
 * Stops (engine status `stopped`): replay-mismatch → Failed/ReplayMismatch, cancelled →
 * Cancelled/Cancelled, suspended → status Waiting (not final).
 */
import { z } from 'zod';
import {
  APP_ERROR_NAMES,
  FAILURE_KINDS,
  FAILURE_REASONS,
  type FailureKind,
  type FailureReason,
  LOG_LEVELS,
  RUN_STATUSES,
  type RunStatus,
} from './kinds.ts';

export const logLineSchema = z.object({
  level: z.enum(LOG_LEVELS),
  text: z.string(),
});

/** Where a binding came from: the connection and the tool, resource or prompt behind it. */
const callSourceSchema = z.object({
  connectionId: z.string(),
  connectionName: z.string(),
  name: z.string(),
  kind: z.enum(['tool', 'resource', 'prompt']),
});

/** What one binding call ended with, as the program saw it. */
const callResultSchema = z.discriminatedUnion('_tag', [
  z.object({ _tag: z.literal('Completed'), value: z.unknown() }),
  z.object({
    _tag: z.literal('Failed'),
    error: z.object({
      name: z.enum(APP_ERROR_NAMES),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
  z.object({ _tag: z.literal('Stopped'), code: z.string(), message: z.string() }),
]);

const callOutcomeSchema = z.discriminatedUnion('_tag', [
  /** Claimed or sent; no outcome journaled yet. */
  z.object({ _tag: z.literal('Pending') }),
  /** Waits for a decision. */
  z.object({ _tag: z.literal('Waiting') }),
  z.object({ _tag: z.literal('Done'), result: callResultSchema }),
]);

export const codeRunCallSchema = z.object({
  index: z.number().int().nonnegative(),
  binding: z.string(),
  source: callSourceSchema.optional(),
  operationId: z.string(),
  outcome: callOutcomeSchema,
});

const runResultSchema = z.discriminatedUnion('_tag', [
  z.object({ _tag: z.literal('Completed'), value: z.unknown().optional(), logs: z.array(logLineSchema) }),
  z.object({
    _tag: z.literal('Failed'),
    reason: z.enum(FAILURE_REASONS),
    /** The run_code failure kind behind the reason, when the engine produced one. */
    kind: z.enum(FAILURE_KINDS).optional(),
    message: z.string(),
    logs: z.array(logLineSchema),
    /** Which value could not be carried and how to return it instead (`result.when is a Date: …`). */
    detail: z.string().optional(),
    /** Where in the program (1-based line and column) an uncaught error was thrown. */
    line: z.number().int().optional(),
    column: z.number().int().optional(),
    /** The error's stack, trimmed to the program's frames. */
    stack: z.string().optional(),
  }),
]);

export const codeRunRecordSchema = z.object({
  id: z.string(),
  session: z.string(),
  turn: z.string(),
  callId: z.string(),
  status: z.enum(RUN_STATUSES),
  code: z.string(),
  /** The run's description: why the Agent wrote the program. */
  reason: z.string(),
  calls: z.array(codeRunCallSchema),
  /** Absent while the run is Running or Waiting. */
  result: runResultSchema.optional(),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** The run_code result text (engine's renderResultText); absent until the run ends. */
  text: z.string().optional(),
  /** Which contract the run follows: `run_code` (document 000) or `code-mode` (document 003). */
  style: z.enum(['run_code', 'code-mode']).optional(),
  /** The connections (Apps) the run was given: those its request named, else the tenant's at submit. */
  connections: z.array(z.string()).optional(),
  /**
   * The limits fixed when the run was accepted and used by every execution and replay of it;
   * `settingsVersion` is the platform settings version a Code Mode run took them from.
   */
  limits: z
    .object({
      timeoutMs: z.number().nullable(),
      memoryMb: z.number(),
      outputBytes: z.number(),
      outputCap: z.enum(['shared', 'separate']),
      settingsVersion: z.number().optional(),
    })
    .optional(),
});

export type LogLineRecord = z.infer<typeof logLineSchema>;
export type CallOutcomeRecord = z.infer<typeof callOutcomeSchema>;
export type CodeRunCall = z.infer<typeof codeRunCallSchema>;
export type RunResult = z.infer<typeof runResultSchema>;
export type CodeRunRecord = z.infer<typeof codeRunRecordSchema>;

const FINAL_STATUSES: readonly RunStatus[] = ['Completed', 'Failed', 'Cancelled'];
export function isFinalStatus(status: string): boolean {
  return (FINAL_STATUSES as readonly string[]).includes(status);
}

/** Code Mode reason for a run_code failure kind (see the table at the top of this file). */
export function reasonForFailure(kind: FailureKind, cause?: 'memory'): FailureReason {
  switch (kind) {
    case 'exception':
    case 'invalid-output':
    case 'protocol':
      return 'Error';
    case 'timeout':
      return 'Timeout';
    case 'abort':
      return 'Cancelled';
    case 'worker-exit':
      return cause === 'memory' ? 'Memory' : 'Unavailable';
    case 'output-limit':
      return 'OutputTooLarge';
    case 'sandbox-unavailable':
      return 'Unavailable';
  }
}

/** Final status for a failure kind: an abort is a stop (Cancelled), everything else Failed. */
export function statusForFailure(kind: FailureKind): 'Failed' | 'Cancelled' {
  return kind === 'abort' ? 'Cancelled' : 'Failed';
}
