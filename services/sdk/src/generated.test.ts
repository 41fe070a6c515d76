/**
 * The SDK's types are generated from the gateway's OpenAPI document, committed as `openapi.json`
 * (the gateway's `openapi.test.ts` fails while that file is not the document of its routes): the
 * committed types are exactly what the generator writes from it now (run
 * `node services/sdk/src/codegen/generate.ts` after an API change), every operation of the
 * document is typed, and the generator maps the JSON Schema forms the document uses.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_FILE, generatedTypes, openApiDocument } from './codegen/generate.ts';
import { openApiToTs, schemaType } from './codegen/openapi-to-ts.ts';

describe('generated OpenAPI types', () => {
  it('the committed file is what the generator writes from the current document', () => {
    const committed = readFileSync(GENERATED_FILE, 'utf8');
    const fresh = generatedTypes();
    const firstDiff = [...fresh].findIndex((c, i) => committed[i] !== c);
    expect(
      committed === fresh ? 'same' : `differs at ${firstDiff}: ${fresh.slice(firstDiff, firstDiff + 200)}`,
      'regenerate: bash scripts/toolchain.sh node services/sdk/src/codegen/generate.ts',
    ).toBe('same');
  });

  it('types every operation of the document', () => {
    const doc = openApiDocument() as unknown as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    expect(ids.length).toBeGreaterThan(30);
    const generated = readFileSync(GENERATED_FILE, 'utf8');
    for (const id of ids) {
      expect(generated, id).toContain(`: operations["${id}"];`);
      expect(generated, id).toMatch(new RegExp(`^  ${id}: \\{$`, 'm'));
    }
  });

  it('maps refs, enums, nullables, arrays, open and closed objects', () => {
    expect(schemaType({ $ref: '#/components/schemas/CodeRun' }, 0)).toBe('components["schemas"]["CodeRun"]');
    expect(schemaType({ enum: ['a', 'b'] }, 0)).toBe('"a" | "b"');
    expect(schemaType({ anyOf: [{ type: 'number' }, { type: 'null' }] }, 0)).toBe('number | null');
    expect(schemaType({ type: 'array', items: { type: 'string' } }, 0)).toBe('(string)[]');
    expect(
      schemaType(
        {
          type: 'object',
          properties: { a: { type: 'string' } },
          required: ['a'],
          additionalProperties: false,
        },
        0,
      ),
    ).toBe('{\n  a: string;\n}');
    expect(schemaType({ type: 'object', properties: {}, additionalProperties: {} }, 0)).toBe(
      '{\n  [key: string]: unknown;\n}',
    );
    const ts = openApiToTs({
      paths: {
        '/x/{id}': {
          get: {
            operationId: 'getX',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
            responses: {
              200: { description: 'ok', content: { 'application/json': { schema: { type: 'number' } } } },
            },
          },
        },
      },
      components: { schemas: {} },
    });
    expect(ts).toContain('get: operations["getX"];');
    expect(ts).toContain('query?: never;');
    expect(ts).toContain('"application/json": number;');
  });
});
