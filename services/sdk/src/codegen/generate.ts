/**
 * Writes src/generated/openapi.ts from the gateway's OpenAPI document (the routes its operations
 * table describes, which the gateway's test holds equal to the registered routes).
 * `bash scripts/toolchain.sh node services/sdk/src/codegen/generate.ts`; a test fails when the
 * committed file differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { documentedRoutes, openApiDocument } from '@islet/gateway';
import { openApiToTs } from './openapi-to-ts.ts';

export const GENERATED_FILE = fileURLToPath(new URL('../generated/openapi.ts', import.meta.url));

export function generatedTypes(): string {
  return openApiToTs(openApiDocument(documentedRoutes()) as unknown as Parameters<typeof openApiToTs>[0]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(GENERATED_FILE, generatedTypes());
  process.stdout.write(`wrote ${GENERATED_FILE}\n`);
}
