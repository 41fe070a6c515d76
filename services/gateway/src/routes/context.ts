import type { Auth } from '../auth.ts';
import type { BindingCalls } from '../binding-calls.ts';
import type { GatewayDeps } from '../deps.ts';
import type { McpApps } from '../mcp-apps.ts';
import type { RouteCatalog } from '../openapi.ts';
import type { RunsService } from '../runs-service.ts';

/** What every route plugin receives. Route groups are separate plugins registered in `index.ts`. */
export interface RouteContext {
  deps: GatewayDeps;
  auth: Auth;
  runsService: RunsService;
  bindingCalls: BindingCalls;
  /** Connection kind `mcp`: discovery, tool-list watching, calls. */
  mcpApps: McpApps;
  /** Aborted when the app starts closing: long waits (SSE, Prefer: wait) end so close is quick. */
  closing: AbortSignal;
  /** The routes registered so far; `/openapi.json` and `/docs` describe them. Set by `registerRoutes`. */
  routes?: RouteCatalog;
}
