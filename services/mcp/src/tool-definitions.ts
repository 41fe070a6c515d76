/**
 * A tenant's tools as definitions: MCP `tools/list` entries, and the same tools in the shapes
 * OpenAI's and Anthropic's APIs take (`GET /v1/tools?format=`). All come from the zod schemas.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ResolvedTool } from './mcp-settings.ts';
import { jsonSchemaOf, SURFACE_DEFINITIONS } from './tool-schemas.ts';

export const TOOL_FORMATS = ['mcp', 'openai', 'anthropic'] as const;
type ToolFormat = (typeof TOOL_FORMATS)[number];

export function mcpTool(tool: ResolvedTool): Tool {
  const def = SURFACE_DEFINITIONS[tool.surface];
  const out: Tool = {
    name: tool.name,
    description: tool.description,
    inputSchema: jsonSchemaOf(def.input, 'input'),
    annotations: {
      // The code-API tool only reads declarations; the others run programs that may call Apps.
      readOnlyHint: tool.surface === 'code_api',
      openWorldHint: tool.surface !== 'code_api',
    },
  };
  if (def.output) out.outputSchema = jsonSchemaOf(def.output, 'output');
  return out;
}

export function toolDefinitions(tools: ResolvedTool[], format: ToolFormat): { tools: unknown[] } {
  switch (format) {
    case 'mcp':
      return { tools: tools.map(mcpTool) };
    case 'openai':
      // Chat Completions' function tools (the Responses API takes the inner object flattened).
      return {
        tools: tools.map((t) => ({
          type: 'function',
          function: {
            name: t.name,
            description: t.description,
            parameters: jsonSchemaOf(SURFACE_DEFINITIONS[t.surface].input, 'input'),
          },
        })),
      };
    case 'anthropic':
      return {
        tools: tools.map((t) => ({
          name: t.name,
          description: t.description,
          input_schema: jsonSchemaOf(SURFACE_DEFINITIONS[t.surface].input, 'input'),
        })),
      };
  }
}
