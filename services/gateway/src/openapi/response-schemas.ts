/**
 * Shapes of the API's JSON answers that no request-side schema already names, for the OpenAPI
 * document (and so for the SDK's generated types). Loose objects: the gateway may add fields.
 */
import { codeModeSettingsSchema, SCOPES } from '@islet/core';
import { codeRunRecordSchema, SANDBOX_MODES } from '@islet/protocol';
import { z } from 'zod';

export const codeRunPageSchema = z.object({
  items: z.array(codeRunRecordSchema),
  nextCursor: z.string().nullable().describe('Pass as ?cursor= for the next page; null on the last.'),
});

export const decisionSchema = z.looseObject({
  id: z.string().describe('<run>:<index>'),
  state: z.enum(['pending', 'allowed', 'denied', 'expired']),
  capability: z.object({ action: z.enum(['apps.call', 'sandbox.escalate']), target: z.string() }),
  toolCallId: z.string(),
  app: z.object({ id: z.string(), callId: z.string(), arguments: z.unknown() }).optional(),
  code: z.object({
    run: z.string(),
    index: z.number().int().describe('-1: the run’s wider-access request'),
    code: z.string(),
  }),
  justification: z.string().optional(),
  approval: z.string().describe('hold: the program waits in place; stop: the run stopped and is replayed'),
  requestedAt: z.number(),
  expiresAt: z.number(),
});

export const decisionListSchema = z.object({ items: z.array(decisionSchema) });

export const callAcceptedSchema = z.object({ accepted: z.literal(true) });

export const connectionViewSchema = z.looseObject({
  id: z.string(),
  kind: z.string(),
  name: z.string(),
  slug: z.string(),
  headers: z.array(z.string()).optional().describe('Names of the sealed headers; values are never returned.'),
  signing: z
    .looseObject({ scheme: z.string(), secrets: z.number() })
    .optional()
    .describe('http connections: that requests are signed (never a secret)'),
  bindings: z.array(z.string()).describe('What a program calls: apps.<slug>.<tool>'),
});

export const createdConnectionSchema = connectionViewSchema.extend({
  signingSecret: z
    .string()
    .optional()
    .describe(
      'http connections: the Standard Webhooks secret (whsec_…), shown once; verify App requests with it.',
    ),
});

export const rotatedSecretSchema = z.object({
  signingSecret: z.string().describe('The new secret, shown once'),
  previousExpiresAt: z
    .number()
    .optional()
    .describe('Until when (ms since the epoch) the previous secret still signs'),
});

export const connectionListSchema = z.object({ items: z.array(connectionViewSchema) });

export const tenantSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  rateLimitPerMinute: z.number().optional(),
  maxInFlightRuns: z.number().optional(),
});

export const tenantListSchema = z.object({ items: z.array(tenantSchema) });

export const createdKeySchema = z.looseObject({
  key: z.string().describe('Shown once; only its SHA-256 is stored.'),
  keyId: z.string(),
  principal: z.string(),
  tenantId: z.string(),
  scopes: z.array(z.enum(SCOPES)),
});

export const platformSettingsSchema = z.looseObject({
  version: z.number().int(),
  codeMode: codeModeSettingsSchema,
});

export const fileWrittenSchema = z.object({ path: z.string(), sizeBytes: z.number().int() });

export const fileListSchema = z.object({
  files: z.array(z.object({ path: z.string(), sizeBytes: z.number().int(), modifiedAtMs: z.number() })),
  nextCursor: z.string().optional().describe('Absent on the last page.'),
});

export const codeApiSchema = z.looseObject({
  declarations: z.string().describe('TypeScript declarations of the bindings'),
});

export const toolsSchema = z.looseObject({ format: z.string() });

export const policyViewSchema = z.looseObject({ effective: z.record(z.string(), z.unknown()) });

export const statusSchema = z.object({ status: z.string() });

export const skillResultSchema = z.object({
  success: z.boolean().describe('True if the program exited 0'),
  output: z
    .string()
    .describe('Captured stdout: the first 1 MiB (the program is not stopped for printing more)'),
  error: z.string().describe('Captured stderr (or error message)'),
  exitCode: z.number().int().describe('Process exit code (124: timeout, 127: interpreter missing)'),
  language: z.enum(['python', 'javascript', 'bash']),
});

export const sandboxModeSchema = z.enum(SANDBOX_MODES);
