/**
 * The tools Islet offers an agent, as zod schemas: the only definition. `/mcp`'s `tools/list` and
 * `GET /v1/tools` turn them into JSON Schema with `z.toJSONSchema`, and the call handlers validate
 * with the same schemas, so what a model is shown and what is accepted cannot drift apart. The
 * fields reuse the contract schemas of `@islet/protocol` (run_code and the skill) and only add the
 * documents' descriptions.
 */
import {
  codeRunCallSchema,
  logLineSchema,
  RUN_STATUSES,
  RunCodeRequestSchema,
  skillRequestSchema,
} from '@islet/protocol';
import { z } from 'zod';

const run = RunCodeRequestSchema.shape;

/** run_code (document 000): the parameters and their descriptions as the document writes them. */
const runCodeInput = z.object({
  code: run.code.describe(
    'The program itself: the body of an async function. Top-level `await` and `return` both work, and the returned value comes back with the run.',
  ),
  description: run.description.describe(
    'Five to ten words in active voice, saying what the program does; it appears as the title of the run in the chat.',
  ),
  timeoutMs: run.timeoutMs.describe(
    'A longer time budget in milliseconds: a positive number, capped at the maximum. Omitted, the default applies.',
  ),
  sandbox_permissions: run.sandbox_permissions.describe(
    'A wider file-access mode for this complete program run.',
  ),
  justification: run.justification.describe(
    'A one-sentence reason why this run needs wider access; it is shown to you before the program starts. Required with `sandbox_permissions`.',
  ),
});

/** Code Mode's code-API tool (document 003): search the declarations by words or by connection. */
export const codeApiInput = z.object({
  q: z
    .string()
    .max(500)
    .optional()
    .describe('Words that every shown binding must contain (its name, description or connection).'),
  connection: z
    .string()
    .max(200)
    .optional()
    .describe("Only this connection's bindings: its id, binding name or name."),
});

/** Code Mode's run-code tool (document 003). */
export const codeRunInput = z.object({
  code: run.code.describe(
    'The JavaScript program: the body of an async function. It calls bindings as `await apps.<connection>.<capability>(args)` and returns what you need.',
  ),
  reason: z
    .string()
    .max(500)
    .optional()
    .describe('Why the program runs, in one sentence; it is kept as the code run\'s "reason".'),
});

const codeRunOutput = z.object({
  runId: z.string(),
  status: z.enum(RUN_STATUSES),
  /** What the program returned (Completed). */
  value: z.unknown().optional(),
  /** The Code Mode failure reason (Failed, Cancelled). */
  reason: z.string().optional(),
  message: z.string().optional(),
  logs: z.array(logLineSchema),
  calls: z.array(codeRunCallSchema),
  /** Set while the run waits for a decision. */
  decision: z.object({ id: z.string(), index: z.number(), answer: z.string() }).optional(),
});

const skill = skillRequestSchema.shape;

/** The run_code skill (document 002): its inputSchema's fields and descriptions. */
const skillInput = z.object({
  language: skill.language.describe(
    "Language to run the code in. 'python' uses python3, 'javascript' uses node, 'bash' uses bash.",
  ),
  code: skill.code.describe(
    'The full source of the program to execute. Multi-line is fine. Print results to stdout.',
  ),
  timeout: skill.timeout.describe('Timeout in milliseconds (default: 60000, max: 120000).'),
});

/** The skill's output shape (document 002). */
const skillOutput = z.object({
  success: z.boolean().describe('True if the program exited 0'),
  output: z.string().describe('Captured stdout'),
  error: z.string().describe('Captured stderr (or error message)'),
  exitCode: z.number().describe('Process exit code'),
  language: skill.language,
});

/** The four surfaces a tenant can offer, keyed by a stable id (names are per tenant). */
export const SURFACES = ['run_code', 'code_api', 'code_run', 'skill'] as const;
export type Surface = (typeof SURFACES)[number];

interface SurfaceDefinition {
  defaultName: string;
  defaultDescription: string;
  input: z.ZodObject;
  output?: z.ZodObject;
}

export const SURFACE_DEFINITIONS: Record<Surface, SurfaceDefinition> = {
  run_code: {
    defaultName: 'run_code',
    defaultDescription: [
      'Runs a small program in which you call your other tools. The program is the body of an async function (top-level await and return work); it calls tools as `await apps.<connection>.<capability>(args)` or `apps.call("connection.capability", args)`.',
      'Only run_code is called directly: reach every other tool from inside a program.',
      'Each run is fresh, has no network and an empty environment; console.log/info/warn/error/debug lines and the returned value come back together when the run ends. Values must be plain JSON data.',
      'The result is the printed lines and the returned value, "(run_code completed with no output)", or "code run failed (<kind>): <message>".',
    ].join(' '),
    input: runCodeInput,
  },
  code_api: {
    defaultName: 'openbot_code_api',
    defaultDescription:
      'Shows the TypeScript declarations of the bindings (apps.<connection>.<capability>) a program can call. Search them by words or by connection.',
    input: codeApiInput,
  },
  code_run: {
    defaultName: 'openbot_run_code',
    defaultDescription:
      'Runs a program and gives back its result, its log lines, and a list of its App calls. The program is the body of an async function and calls bindings as `await apps.<connection>.<capability>(args)`; App calls that need a decision stop the program until the decision is answered.',
    input: codeRunInput,
    output: codeRunOutput,
  },
  skill: {
    // The skill document also names its tool run_code; it needs a name of its own beside document 000's.
    defaultName: 'run_code_skill',
    defaultDescription:
      'Write and execute a throwaway multi-line program (python, javascript/node, or bash) and capture its output. Use this instead of bash when you need real logic — loops, parsing, math, data transforms, calling a library — rather than a single shell command. The agent authors a small program on the fly and runs it as a first-class action.',
    input: skillInput,
    output: skillOutput,
  },
};

type JsonSchemaObject = { type: 'object'; [key: string]: unknown };

/** JSON Schema of a tool's input or output as a model is shown it (draft 2020-12, no `$schema`). */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchemaObject {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return { ...rest, type: 'object' };
}
