/**
 * Writes src/generated/openapi.ts from the OpenAPI document the gateway commits beside this
 * package (`openapi.json`; the gateway's `openapi.test.ts` holds it equal to the routes it
 * registers, `node services/gateway/src/openapi-file.ts` rewrites it). Reading the file, not
 * importing the gateway, keeps the SDK free of a dependency back on it.
 * `bash scripts/toolchain.sh node services/sdk/src/codegen/generate.ts`; a test fails when the
 * committed file differs from what this writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openApiToTs } from './openapi-to-ts.ts';

export const GENERATED_FILE = fileURLToPath(new URL('../generated/openapi.ts', import.meta.url));
export const OPENAPI_FILE = fileURLToPath(new URL('../../openapi.json', import.meta.url));

export type OpenApiDocument = Parameters<typeof openApiToTs>[0];

export function openApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenApiDocument;
}

export function generatedTypes(): string {
  return openApiToTs(openApiDocument());
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(GENERATED_FILE, generatedTypes());
  process.stdout.write(`wrote ${GENERATED_FILE}\n`);
}
