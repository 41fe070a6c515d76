/**
 * The OpenAPI document as a committed file, `services/sdk/openapi.json`: the SDK's codegen reads
 * it, so the SDK never imports the gateway (the gateway already reaches the SDK through the
 * console, which uses its client: an import back would close a cycle). `openapi.test.ts` fails
 * while the file is not the current document;
 * `bash scripts/toolchain.sh node services/gateway/src/openapi-file.ts` rewrites it.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { documentedRoutes, openApiDocument } from './openapi.ts';

export const OPENAPI_FILE = fileURLToPath(new URL('../../sdk/openapi.json', import.meta.url));

/** The file's text: the document of the documented routes, two-space JSON, a final newline. */
export function openApiJson(): string {
  return `${JSON.stringify(openApiDocument(documentedRoutes()), null, 2)}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(OPENAPI_FILE, openApiJson());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
