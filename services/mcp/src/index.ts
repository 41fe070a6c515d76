export type { McpCaller, McpHost, McpRunState, McpRunStyle } from './host.ts';
export { createIsletMcpServer, decisionText, directCallRefusal } from './islet-mcp-server.ts';
export {
  CLIENT_INFO,
  callMcpApp,
  type DiscoveredTool,
  type Discovery,
  discover,
  type McpAppAnswer,
  type McpAppCall,
  type McpAppTarget,
} from './mcp-app.ts';
export { mcpRoutes } from './mcp-routes.ts';
export { type McpSettings, mcpSettingsSchema, resolveTools } from './mcp-settings.ts';
export { createMcpStore, type McpStore } from './mcp-store.ts';
export { createMcpToolWatcher } from './mcp-tool-watcher.ts';
export { TOOL_FORMATS, toolDefinitions } from './tool-definitions.ts';
export { jsonSchemaOf, SURFACE_DEFINITIONS, SURFACES, type Surface } from './tool-schemas.ts';
