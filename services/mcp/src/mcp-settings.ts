/**
 * A tenant's MCP surface: which of the four tools it offers, under which names and descriptions.
 * Stored as one JSON value per tenant (`keys.mcpSettings`, mcp-store.ts); absent fields take the defaults of
 * `SURFACE_DEFINITIONS` (every surface on, the documents' names). Platform admins set it.
 */
import { z } from 'zod';
import { SURFACE_DEFINITIONS, SURFACES, type Surface } from './tool-schemas.ts';

/** MCP tool names: 1-64 of [A-Za-z0-9_.-] (what the spec's clients accept everywhere). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const surfaceSetting = z
  .object({
    enabled: z.boolean().optional(),
    name: z.string().regex(TOOL_NAME, 'expected 1-64 of A-Z a-z 0-9 _ . -').optional(),
    description: z.string().min(1).max(4000).optional(),
  })
  .strict();

export const mcpSettingsSchema = z
  .object({
    tools: z
      .object(
        Object.fromEntries(SURFACES.map((s) => [s, surfaceSetting.optional()])) as {
          [K in Surface]: z.ZodOptional<typeof surfaceSetting>;
        },
      )
      .strict()
      .default({} as never),
  })
  .strict()
  .superRefine((settings, ctx) => {
    const names = resolveTools(settings).map((t) => t.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) ctx.addIssue({ code: 'custom', path: ['tools'], message: `two tools are named "${dup}"` });
  });

export type McpSettings = z.infer<typeof mcpSettingsSchema>;

export interface ResolvedTool {
  surface: Surface;
  name: string;
  description: string;
}

/** The tools a tenant offers, in a fixed order, with its names and descriptions. */
export function resolveTools(settings: McpSettings): ResolvedTool[] {
  const out: ResolvedTool[] = [];
  for (const surface of SURFACES) {
    const own = settings.tools?.[surface];
    if (own?.enabled === false) continue;
    const def = SURFACE_DEFINITIONS[surface];
    out.push({
      surface,
      name: own?.name ?? def.defaultName,
      description: own?.description ?? def.defaultDescription,
    });
  }
  return out;
}
