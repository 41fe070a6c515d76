export type {
  McpCaller,
  McpHost,
  McpPendingDecision,
  McpRunInput,
  McpRunState,
  McpRunStyle,
  McpRuns,
} from './host.ts';
export { createIsletMcpServer, decisionText, directCallRefusal, GET_RUN_TOOL } from './islet-mcp-server.ts';
export {
  CLIENT_INFO,
  callMcpApp,
  type DiscoveredPrompt,
  type DiscoveredResource,
  type DiscoveredTool,
  type Discovery,
  discover,
  type McpAppAnswer,
  type McpAppCall,
  type McpAppTarget,
} from './mcp-app.ts';
export { type McpRoutesOptions, mcpRoutes } from './mcp-routes.ts';
export { type McpSettings, mcpSettingsSchema, resolveTools } from './mcp-settings.ts';
export { createMcpStore, type McpStore } from './mcp-store.ts';
export { createMcpToolWatcher, type McpToolWatcher } from './mcp-tool-watcher.ts';
export { TOOL_FORMATS, type ToolFormat, toolDefinitions } from './tool-definitions.ts';
export { jsonSchemaOf, SURFACE_DEFINITIONS, SURFACES, type Surface } from './tool-schemas.ts';
