/**
 * Every operation of the API, typed from the generated OpenAPI types: paths, parameters, bodies,
 * answers and problem+json refusals (openapi-fetch). `createIsletClient` (client.ts) is the
 * friendlier layer over the common calls; this is the whole surface.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths } from './generated/openapi.ts';

export type { components, operations, paths };
export type Schemas = components['schemas'];
export type IsletApi = Client<paths>;

export function createIsletApi(options: { url: string; key: string; fetch?: typeof fetch }): IsletApi {
  const api = createClient<paths>({
    baseUrl: options.url.replace(/\/$/, ''),
    headers: { authorization: `Bearer ${options.key}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return api;
}
