/**
 * TypeScript declarations of a tenant's bindings, generated from the tools' JSON Schemas, for
 * `GET /v1/code-api` (Code Mode's `openbot_code_api`). Only the JSON Schema an Agent needs to
 * write a call is rendered; anything unknown becomes `unknown`, never an error.
 */
import { type Connection, slugify } from './connections.ts';

type Schema = Record<string, unknown>;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function schemaToTs(schema: unknown, depth = 0): string {
  if (!schema || typeof schema !== 'object' || depth > 8) return 'unknown';
  const s = schema as Schema;
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ') || 'never';
  if ('const' in s) return JSON.stringify(s.const);
  for (const k of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[k])) return (s[k] as unknown[]).map((x) => schemaToTs(x, depth + 1)).join(' | ');
  }
  if (Array.isArray(s.allOf)) return (s.allOf as unknown[]).map((x) => schemaToTs(x, depth + 1)).join(' & ');
  const type = s.type;
  if (Array.isArray(type)) return type.map((t) => schemaToTs({ ...s, type: t }, depth + 1)).join(' | ');
  switch (type) {
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
      return `Array<${schemaToTs(s.items, depth + 1)}>`;
    case 'object':
    case undefined: {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      const entries = Object.entries(props);
      if (entries.length === 0 && type === undefined) return 'unknown';
      const pad = '  '.repeat(depth + 1);
      const lines = entries.map(([k, v]) => {
        const desc = (v as Schema | undefined)?.description;
        const doc = typeof desc === 'string' ? `${pad}/** ${desc.replace(/\*\//g, '* /')} */\n` : '';
        const key = IDENT.test(k) ? k : JSON.stringify(k);
        return `${doc}${pad}${key}${required.has(k) ? '' : '?'}: ${schemaToTs(v, depth + 1)};`;
      });
      if (s.additionalProperties && typeof s.additionalProperties === 'object')
        lines.push(`${pad}[key: string]: ${schemaToTs(s.additionalProperties, depth + 1)};`);
      if (lines.length === 0) return 'Record<string, unknown>';
      return `{\n${lines.join('\n')}\n${'  '.repeat(depth)}}`;
    }
    default:
      return 'unknown';
  }
}

const str = { type: 'string' } as const;
const encoding = {
  enum: ['utf8', 'base64'],
  description: 'How content is encoded; default utf8 (base64 for binary files)',
} as const;
const path = { type: 'string', description: "Relative to the session's workspace" } as const;

/**
 * The built-in `files.*` bindings every run has (served by the runner through `createFilesBinding`
 * in `@islet/kernel-sandbox`, never by a connection), declared as a pseudo-connection `files` so
 * they are searchable like any App. The schemas mirror exactly what that handler accepts and
 * returns; keep them in step with it. `connectionId`/`connectionName` `files` is what the run's
 * call journal records as their source.
 */
const FILES_CONNECTION: Connection = {
  id: 'files',
  slug: 'files',
  name: 'files',
  kind: 'client',
  createdAt: 0,
  resources: [],
  prompts: [],
  tools: [
    {
      name: 'read',
      description: "Read a file of the session's workspace (every sandbox mode)",
      policy: 'allow',
      inputSchema: { type: 'object', properties: { path, encoding }, required: ['path'] },
      outputSchema: {
        type: 'object',
        properties: {
          path: str,
          encoding: { enum: ['utf8', 'base64'] },
          content: str,
          sizeBytes: { type: 'integer' },
        },
        required: ['path', 'encoding', 'content', 'sizeBytes'],
      },
    },
    {
      name: 'write',
      description:
        "Create or replace a file of the session's workspace (workspace-write and danger-full-access; refused in read-only)",
      policy: 'allow',
      inputSchema: {
        type: 'object',
        properties: { path, content: str, encoding },
        required: ['path', 'content'],
      },
      outputSchema: {
        type: 'object',
        properties: { path: str, sizeBytes: { type: 'integer' } },
        required: ['path', 'sizeBytes'],
      },
    },
    {
      name: 'list',
      description:
        "List the files of the session's workspace, one page in path order (every sandbox mode); pass nextCursor back as cursor for the next page",
      policy: 'allow',
      inputSchema: {
        type: 'object',
        properties: {
          prefix: { type: 'string', description: 'A directory (everything under it) or a file; default all' },
          limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'Files per page; default 1000' },
          cursor: { type: 'string', description: 'nextCursor of the previous page' },
        },
      },
      outputSchema: {
        type: 'object',
        properties: {
          files: {
            type: 'array',
            items: {
              type: 'object',
              properties: { path: str, sizeBytes: { type: 'integer' } },
              required: ['path', 'sizeBytes'],
            },
          },
          nextCursor: { type: 'string', description: 'Present when more files follow' },
        },
        required: ['files'],
      },
    },
    {
      name: 'remove',
      description:
        "Remove a file of the session's workspace; removed is false when there was none (workspace-write and danger-full-access; refused in read-only)",
      policy: 'allow',
      inputSchema: { type: 'object', properties: { path }, required: ['path'] },
      outputSchema: {
        type: 'object',
        properties: { path: str, removed: { type: 'boolean' } },
        required: ['path', 'removed'],
      },
    },
  ],
};

interface DeclaredBinding {
  binding: string;
  connectionId: string;
  connectionName: string;
  kind: 'tool' | 'resource' | 'prompt';
  name: string;
  description?: string;
  declaration: string;
  /** Served by the runtime itself (`files.*`), not by one of the tenant's connections. */
  builtIn?: true;
}

/** What an `mcp` connection's binding resolves to: the MCP result itself (Code Mode document). */
function mcpResultTs(kind: 'tool' | 'resource' | 'prompt', outputSchema: unknown): string {
  if (kind === 'resource')
    return '{ contents: Array<{ uri: string; mimeType?: string; text?: string; blob?: string }> }';
  if (kind === 'prompt')
    return '{ description?: string; messages: Array<{ role: "user" | "assistant"; content: Record<string, unknown> }> }';
  const structured = outputSchema
    ? `structuredContent: ${schemaToTs(outputSchema, 2)}`
    : 'structuredContent?: unknown';
  return `{ content: Array<Record<string, unknown>>; ${structured} }`;
}

function promptArgs(
  list: Array<{ name: string; description?: string | undefined; required?: boolean | undefined }>,
): string {
  return schemaToTs(
    {
      type: 'object',
      properties: Object.fromEntries(
        list.map((a) => [
          a.name,
          { type: 'string', ...(a.description ? { description: a.description } : {}) },
        ]),
      ),
      required: list.filter((a) => a.required).map((a) => a.name),
    },
    2,
  );
}

const comment = (text: string | undefined, pad: string) =>
  text ? `${pad}/** ${text.replace(/\*\//g, '* /').replace(/\n/g, ' ')} */\n` : '';

/**
 * `style`: `code-mode` declares the Apps only (Code Mode programs have no files); `run_code` (the
 * default) also the built-in `files.*` bindings, as a run_code run gets them.
 */
export function declareBindings(
  connections: Connection[],
  filter: { q?: string; connection?: string; style?: 'run_code' | 'code-mode' } = {},
) {
  const words = (filter.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const wanted = filter.connection?.toLowerCase();
  const bindings: DeclaredBinding[] = [];
  const blocks: string[] = [];
  // Built-ins first; connection registration refuses their slugs, so nothing here is shadowed.
  const builtIns = filter.style === 'code-mode' ? [] : [FILES_CONNECTION];
  for (const c of [...builtIns, ...connections]) {
    const builtIn = c === FILES_CONNECTION;
    if (wanted && ![c.id, c.slug, c.name.toLowerCase()].includes(wanted)) continue;
    const members: string[] = [];
    const items = [
      ...c.tools.map((t) => ({ kind: 'tool' as const, ...t })),
      ...c.resources.map((r) => ({
        kind: 'resource' as const,
        ...r,
        inputSchema: undefined,
        outputSchema: undefined,
      })),
      ...c.prompts.map((p) => ({
        kind: 'prompt' as const,
        ...p,
        inputSchema: undefined,
        outputSchema: undefined,
      })),
    ];
    for (const item of items) {
      const cap = slugify(item.name);
      const binding = `${c.slug}.${cap}`;
      const hay = `${binding} ${item.name} ${item.description ?? ''} ${c.name}`.toLowerCase();
      if (words.length && !words.every((w) => hay.includes(w))) continue;
      // files.list takes no required argument: `apps.files.list()` is a valid call.
      const optionalArgs = item.kind !== 'tool' || (builtIn && !item.inputSchema?.required);
      const args =
        item.kind === 'tool'
          ? schemaToTs(item.inputSchema ?? { type: 'object' }, 2)
          : c.kind === 'mcp' && item.kind === 'prompt' && 'arguments' in item && item.arguments?.length
            ? promptArgs(item.arguments)
            : 'Record<string, unknown>';
      const out =
        c.kind === 'mcp'
          ? mcpResultTs(item.kind, item.outputSchema)
          : item.outputSchema
            ? schemaToTs(item.outputSchema, 2)
            : 'unknown';
      const policy =
        item.kind === 'tool' && 'policy' in item && item.policy !== 'allow'
          ? ` (policy: ${item.policy})`
          : '';
      const declaration = `${comment(`${item.description ?? item.name}${policy}`, '    ')}    function ${cap}(args${optionalArgs ? '?' : ''}: ${args}): Promise<${out}>;`;
      members.push(declaration);
      const d: DeclaredBinding = {
        binding,
        connectionId: c.id,
        connectionName: c.name,
        kind: item.kind,
        name: item.name,
        declaration,
      };
      if (item.description) d.description = item.description;
      if (builtIn) d.builtIn = true;
      bindings.push(d);
    }
    if (members.length)
      blocks.push(
        `${comment(builtIn ? "Built-in: the files of the run's session workspace" : `Connection "${c.name}" (${c.id})`, '  ')}  namespace ${c.slug} {\n${members.join('\n')}\n  }`,
      );
  }
  const declarations = [
    'declare namespace apps {',
    ...blocks,
    '  /** Calls a binding by name: apps.call("connection.capability", args). */',
    '  function call(name: string, args?: unknown): Promise<unknown>;',
    '}',
    '',
  ].join('\n');
  return { declarations, bindings };
}
