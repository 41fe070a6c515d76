/**
 * `/docs`: the interactive API reference, Swagger UI (`@fastify/swagger-ui`, its assets served
 * from the package, no CDN) rendering the same document as `/openapi.json`. Try-it-out uses the
 * key the console signed in with (this tab's session storage), or one given with Authorize.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import { openApiDocument } from '../openapi.ts';
import type { RouteContext } from './context.ts';

// Serialized into Swagger UI's initializer by @fastify/swagger-ui, where `ui` is in scope.
declare const ui: { preauthorizeApiKey(name: string, value: string): void };
function useConsoleKey() {
  const key = sessionStorage.getItem('islet.apiKey');
  if (key) ui.preauthorizeApiKey('apiKey', key);
}
declare const sessionStorage: { getItem(name: string): string | null };

export function docsRoutes(ctx: RouteContext): FastifyPluginAsync {
  // The document of the routes registered by the time it is first asked for (all of them).
  let doc: ReturnType<typeof openApiDocument> | undefined;
  const document = () => {
    doc ??= openApiDocument(ctx.routes?.routes ?? []);
    return doc;
  };
  return async (app) => {
    await app.register(swagger, {
      mode: 'static',
      specification: {
        document: { openapi: '3.1.0', info: { title: 'Islet', version: '0.1.0' }, paths: {} },
      },
    });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { tryItOutEnabled: true, persistAuthorization: false, onComplete: useConsoleKey },
      staticCSP: true,
      transformSpecification: () => document(),
      transformSpecificationClone: false,
      // No third-party hosts (validator, https: fonts) and no upgrade to https on a plain-http port.
      transformStaticCSP: (header: string) =>
        header
          .replace(/ validator\.swagger\.io| https:/g, '')
          .replace(/ ?upgrade-insecure-requests;?/, '')
          .trim(),
    });
  };
}
