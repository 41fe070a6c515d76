/**
 * The OpenAPI 3.1 document → TypeScript types in the shape openapi-typescript emits (`paths`,
 * `components`, `operations`), which openapi-fetch types every call with. Covers the JSON Schema
 * the gateway's document uses (zod's output): objects, arrays, enums, const, unions, nullables,
 * records and `$ref`s to components.
 */

type Schema = Record<string, unknown>;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (k: string) => (IDENT.test(k) ? k : JSON.stringify(k));
const pad = (depth: number) => '  '.repeat(depth);
const doc = (text: unknown, depth: number) =>
  typeof text === 'string' && text !== ''
    ? `${pad(depth)}/** ${text.replace(/\*\//g, '*\\/').replace(/\n/g, `\n${pad(depth)} * `)} */\n`
    : '';

export function schemaType(schema: unknown, depth: number): string {
  if (schema === true || schema === undefined) return 'unknown';
  if (!schema || typeof schema !== 'object') return 'unknown';
  const s = schema as Schema;
  if (typeof s.$ref === 'string') {
    const name = s.$ref.replace('#/components/schemas/', '');
    return `components["schemas"][${JSON.stringify(name)}]`;
  }
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ') || 'never';
  for (const k of ['anyOf', 'oneOf'] as const)
    if (Array.isArray(s[k])) return (s[k] as unknown[]).map((x) => schemaType(x, depth)).join(' | ');
  if (Array.isArray(s.allOf))
    return (s.allOf as unknown[]).map((x) => `(${schemaType(x, depth)})`).join(' & ');
  if (Array.isArray(s.type)) return s.type.map((t) => schemaType({ ...s, type: t }, depth)).join(' | ');
  switch (s.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `(${schemaType(s.items, depth)})[]`;
    case 'object':
      return objectType(s, depth);
    default:
      return s.properties ? objectType(s, depth) : 'unknown';
  }
}

function objectType(s: Schema, depth: number): string {
  const props = (s.properties ?? {}) as Record<string, Schema>;
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const lines = Object.entries(props).map(
    ([k, v]) =>
      `${doc(v.description, depth + 1)}${pad(depth + 1)}${key(k)}${required.has(k) ? '' : '?'}: ${schemaType(v, depth + 1)};`,
  );
  const extra = s.additionalProperties;
  // An open object (no `additionalProperties: false`) keeps an index signature: the gateway may add fields.
  if (extra && typeof extra === 'object')
    lines.push(`${pad(depth + 1)}[key: string]: ${schemaType(extra, depth + 1)};`);
  else if (extra === true || (extra === undefined && lines.length === 0))
    lines.push(`${pad(depth + 1)}[key: string]: unknown;`);
  if (lines.length === 0) return 'Record<string, never>';
  return `{\n${lines.join('\n')}\n${pad(depth)}}`;
}

interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Schema; description?: string }>;
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
}

function content(c: Record<string, { schema?: Schema }> | undefined, depth: number): string {
  if (!c) return 'never';
  const lines = Object.entries(c).map(
    ([type, media]) =>
      `${pad(depth + 1)}${JSON.stringify(type)}: ${type.includes('json') ? schemaType(media.schema, depth + 1) : 'string'};`,
  );
  return `{\n${lines.join('\n')}\n${pad(depth)}}`;
}

function operationType(op: Operation, depth: number): string {
  const p = pad(depth + 1);
  const params = (where: string) => {
    const list = (op.parameters ?? []).filter((x) => x.in === where);
    if (list.length === 0) return 'never';
    const lines = list.map(
      (x) =>
        `${doc(x.description, depth + 3)}${pad(depth + 3)}${key(x.name)}${x.required ? '' : '?'}: ${schemaType(x.schema, depth + 3)};`,
    );
    return `{\n${lines.join('\n')}\n${pad(depth + 2)}}`;
  };
  const hasPath = (op.parameters ?? []).some((x) => x.in === 'path');
  const requiredQuery = (op.parameters ?? []).some((x) => x.in === 'query' && x.required);
  const responses = Object.entries(op.responses).map(
    ([status, res]) =>
      `${doc(res.description, depth + 2)}${pad(depth + 2)}${status}: {\n${pad(depth + 3)}headers: { [name: string]: unknown };\n${pad(depth + 3)}content: ${res.content ? content(res.content, depth + 3) : 'never'};\n${pad(depth + 2)}};`,
  );
  return [
    '{',
    `${p}parameters: {`,
    `${pad(depth + 2)}query${requiredQuery ? '' : '?'}: ${params('query')};`,
    `${pad(depth + 2)}header?: ${params('header')};`,
    `${pad(depth + 2)}path${hasPath ? '' : '?'}: ${params('path')};`,
    `${pad(depth + 2)}cookie?: never;`,
    `${p}};`,
    op.requestBody
      ? `${p}requestBody${op.requestBody.required ? '' : '?'}: {\n${pad(depth + 2)}content: ${content(op.requestBody.content, depth + 2)};\n${p}};`
      : `${p}requestBody?: never;`,
    `${p}responses: {`,
    ...responses,
    `${p}};`,
    `${pad(depth)}}`,
  ].join('\n');
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** The whole generated module. */
export function openApiToTs(document: {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}): string {
  const out: string[] = [
    '/**',
    ' * Generated from the gateway’s OpenAPI document by services/sdk/src/codegen/generate.ts.',
    ' * Do not edit: run `bash scripts/toolchain.sh node services/sdk/src/codegen/generate.ts`.',
    ' */',
    '',
    'export interface paths {',
  ];
  const operations: string[] = [];
  for (const path of Object.keys(document.paths).sort()) {
    const item = document.paths[path]!;
    out.push(`  ${JSON.stringify(path)}: {`);
    out.push('    parameters: { query?: never; header?: never; path?: never; cookie?: never };');
    for (const method of METHODS) {
      const op = item[method];
      if (!op) {
        out.push(`    ${method}?: never;`);
        continue;
      }
      out.push(`${doc(op.summary, 2)}    ${method}: operations[${JSON.stringify(op.operationId)}];`);
      operations.push(
        `${doc(op.description ?? op.summary, 1)}  ${key(op.operationId)}: ${operationType(op, 1)};`,
      );
    }
    out.push('  };');
  }
  out.push(
    '}',
    '',
    'export type webhooks = Record<string, never>;',
    '',
    'export interface components {',
    '  schemas: {',
  );
  for (const name of Object.keys(document.components.schemas).sort()) {
    const schema = document.components.schemas[name]!;
    out.push(`${doc(schema.description, 2)}    ${key(name)}: ${schemaType(schema, 2)};`);
  }
  out.push(
    '  };',
    '  responses: never;',
    '  parameters: never;',
    '  requestBodies: never;',
    '  headers: never;',
    '  pathItems: never;',
    '}',
    '',
    'export type $defs = Record<string, never>;',
    '',
    'export interface operations {',
    ...operations,
    '}',
    '',
  );
  return out.join('\n');
}
