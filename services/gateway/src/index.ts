export { buildApp } from './app.ts';
export { declareBindings, schemaToTs } from './code-api.ts';
export { bindingsOf, slugify } from './connections.ts';
export { createGatewayDeps } from './create-deps.ts';
export type { GatewayDeps } from './deps.ts';
export { documentedRoutes, openApiDocument } from './openapi.ts';
export { HttpProblem } from './problem-reply.ts';
export type { RouteContext } from './routes/context.ts';
export { parseRunCodeFields } from './run-request.ts';
