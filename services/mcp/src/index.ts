export type {
  McpCaller,
  McpHost,
  McpPendingDecision,
  McpRunInput,
  McpRunState,
  McpRunStyle,
  McpRuns,
} from './host.ts';
export { createIsletMcpServer, directCallRefusal } from './islet-mcp-server.ts';
export { type McpRoutesOptions, mcpRoutes } from './mcp-routes.ts';
export { createMcpSettingsStore, type McpSettings, mcpSettingsSchema, resolveTools } from './mcp-settings.ts';
export { TOOL_FORMATS, type ToolFormat, toolDefinitions } from './tool-definitions.ts';
export { jsonSchemaOf, SURFACE_DEFINITIONS, SURFACES, type Surface } from './tool-schemas.ts';
