/**
 * `POST /v1/runs`'s body as one schema for the document. The route checks a body in two steps
 * (the run_code fields with the contract's exact refusals, then the placement fields), so the
 * document's schema joins the two and `runRequestAccepts` runs the route's own checks.
 */
import { SANDBOX_MODES } from '@islet/protocol';
import { z } from 'zod';
import { parseRunCodeFields, runPlacementSchema } from '../run-request.ts';
import { runStyleTableMarkdown } from '../run-styles.ts';

export const runRequestSchema = z
  .object({
    code: z.string().describe('The program: the body of an async function.'),
    description: z.string().describe('Five to ten words in active voice.'),
    timeoutMs: z
      .number()
      .positive()
      .nullable()
      .optional()
      .describe(
        'run_code only: time budget in ms (default 120000, capped at the ceiling). null = no deadline, for a principal with the workflows scope.',
      ),
    sandbox_permissions: z
      .enum(SANDBOX_MODES)
      .optional()
      .describe("run_code only: a mode wider than the run's (read-only); asks for a decision first."),
    justification: z
      .string()
      .optional()
      .describe('With sandbox_permissions: one sentence shown before the run.'),
    ...runPlacementSchema.shape,
    style: runPlacementSchema.shape.style.describe(
      "run_code (document 000) or code-mode (document 003); default: the tenant's run policy (run_code).",
    ),
    sessionId: runPlacementSchema.shape.sessionId.describe('Generated when absent.'),
    turnId: runPlacementSchema.shape.turnId.describe('Generated when absent.'),
    callId: runPlacementSchema.shape.callId.describe('Generated when absent.'),
    connections: runPlacementSchema.shape.connections.describe(
      'Connection ids whose Apps the program may call; absent: every App of the tenant.',
    ),
  })
  .describe(`A run. The style decides which document's rules apply:\n\n${runStyleTableMarkdown()}`);

/** The route's checks of a run request: undefined when accepted, else the refusal text. */
export function runRequestAccepts(body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 'the body must be a JSON object';
  const fields = parseRunCodeFields(body as Record<string, unknown>);
  if (!fields.ok) return fields.refusal;
  const placement = runPlacementSchema.safeParse(body);
  return placement.success ? undefined : placement.error.message;
}
