/**
 * The run_code skill's wire shape (the skill document's inputSchema and answer), shared by the
 * gateway's route, the MCP tool and the runner that executes it. Refusals name the field.
 */
import { z } from 'zod';
import { unknownFieldsMessage, unknownFieldsOf } from './unknown-fields.ts';

const SKILL_LANGUAGES = ['python', 'javascript', 'bash'] as const;
export type SkillLanguage = (typeof SKILL_LANGUAGES)[number];
export const SKILL_DEFAULT_TIMEOUT_MS = 60_000;
export const SKILL_MAX_TIMEOUT_MS = 120_000;

/** The request as the skill's inputSchema defines it; refusals name the field. */
export const skillRequestSchema = z.object({
  language: z.enum(SKILL_LANGUAGES, {
    error: () => 'invalid language: expected one of python, javascript, bash',
  }),
  code: z.string({ error: () => 'invalid code: expected a string' }),
  timeout: z
    .number({ error: () => 'invalid timeout: expected a positive number of milliseconds' })
    .refine((n) => Number.isFinite(n) && n > 0, 'invalid timeout: expected a positive number of milliseconds')
    .refine((n) => n <= SKILL_MAX_TIMEOUT_MS, `invalid timeout: the maximum is ${SKILL_MAX_TIMEOUT_MS} ms`)
    .optional(),
});
export type SkillRequest = z.infer<typeof skillRequestSchema>;

/** What an agent may send here that belongs to a code run: said, not guessed at. */
const SKILL_FIELD_HINTS: Record<string, string> = {
  description: 'description belongs to code runs (POST /v1/runs); a skill takes language, code and timeout',
  justification:
    'justification belongs to code runs (POST /v1/runs) that ask for wider access; a skill takes language, code and timeout',
};

/** `extraFields`: fields the caller reads itself (the gateway's `sessionId`, `sandbox_permissions`). */
export function parseSkillRequest(
  body: unknown,
  extraFields: readonly string[] = [],
): { ok: true; value: SkillRequest } | { ok: false; message: string; errors: string[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return {
      ok: false,
      message: 'invalid request: expected a JSON object',
      errors: ['expected a JSON object'],
    };
  }
  const parsed = skillRequestSchema.safeParse(body);
  if (parsed.success) {
    const unknown = unknownFieldsOf(
      body,
      [...Object.keys(skillRequestSchema.shape), ...extraFields],
      SKILL_FIELD_HINTS,
    );
    if (unknown.length > 0) {
      const message = unknownFieldsMessage(unknown);
      return { ok: false, message, errors: [message] };
    }
    return { ok: true, value: parsed.data };
  }
  const errors = parsed.error.issues.map((i) =>
    i.message.startsWith('invalid ') ? i.message : `invalid ${i.path.join('.')}: ${i.message}`,
  );
  return { ok: false, message: errors.join('; '), errors };
}

export interface SkillResult {
  success: boolean;
  output: string;
  error: string;
  exitCode: number;
  language: SkillLanguage;
}
