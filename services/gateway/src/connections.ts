import { bindingNameProblem, validateBindingNames } from '@islet/engine';
import { FILES_BINDING_NAMES } from '@islet/kernel-sandbox';
import type { Connection as ProtocolConnection } from '@islet/protocol';
import type { BindingSpec } from '@islet/runs';
import { z } from 'zod';
import { MAX_PREVIOUS_SECRET_TTL_SECONDS, reservedAppHeader } from './app-signing.ts';

const jsonSchema = z.record(z.string(), z.unknown());
const name = z.string().min(1).max(100);

const toolSchema = z.strictObject({
  name,
  description: z.string().max(2000).optional(),
  inputSchema: jsonSchema.default({ type: 'object' }),
  outputSchema: jsonSchema.optional(),
  policy: z.enum(['allow', 'ask', 'deny']).default('allow'),
});
const readSchema = z.strictObject({
  name,
  description: z.string().max(2000).optional(),
  /** `mcp` resources: the URI the binding reads. */
  uri: z.string().max(2000).optional(),
  /** `mcp` prompts: the arguments the prompt takes. */
  arguments: z
    .array(
      z.strictObject({
        name,
        description: z.string().max(2000).optional(),
        required: z.boolean().optional(),
      }),
    )
    .max(100)
    .optional(),
});

export const connectionInputSchema = z
  .strictObject({
    name: z.string().min(1).max(100),
    kind: z.enum(['http', 'client', 'mcp']),
    url: z.string().url().optional(),
    /** `http`, `mcp`: headers every request to the App carries (e.g. Authorization); sealed at rest, never shown. */
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,100}$/), z.string().max(8000)).optional(),
    tools: z.array(toolSchema).max(200).default([]),
    resources: z.array(readSchema).max(200).default([]),
    prompts: z.array(readSchema).max(200).default([]),
  })
  .refine((c) => c.kind !== 'http' || (c.url && /^https?:/.test(c.url)), {
    message: 'an http connection needs an http(s) url',
    path: ['url'],
  })
  .refine((c) => c.kind !== 'mcp' || (c.url && /^https?:/.test(c.url)), {
    message: 'an mcp connection needs the http(s) url of a Streamable HTTP MCP server',
    path: ['url'],
  })
  .refine((c) => c.kind !== 'client' || c.headers === undefined, {
    message: 'headers are only for http and mcp connections (a client connection sends nothing)',
    path: ['headers'],
  })
  .refine((c) => c.kind !== 'http' || !Object.keys(c.headers ?? {}).some(reservedAppHeader), {
    message:
      'headers may not set content-type, content-length, host, connection, transfer-encoding, idempotency-key, webhook-* or x-islet-* (Islet sends those)',
    path: ['headers'],
  });

/** `POST /v1/connections/{id}/signing-secret/rotate`: how long the previous secret keeps signing (0: not at all). */
export const rotateSchema = z.strictObject({
  previousSecretExpiresInSeconds: z.number().int().min(0).max(MAX_PREVIOUS_SECRET_TTL_SECONDS).optional(),
});

export type ConnectionInput = z.infer<typeof connectionInputSchema>;
/** The stored connection: the wire type (`@islet/protocol`), which the validated input must fit. */
export type Connection = ProtocolConnection;
// Compile-time check: what the schema accepts (less its headers, sealed apart) is a connection's body.
type ConnectionBody = Omit<Connection, 'id' | 'slug' | 'createdAt' | 'sealedHeaders' | 'sealedSigning'>;
const _inputFits = (input: Omit<ConnectionInput, 'headers'>): ConnectionBody => input;
void _inputFits;
export type Tool = z.infer<typeof toolSchema>;

/** "Work calendar" → `work_calendar`; "list-events" → `list_events` (plain identifiers). */
export function slugify(text: string): string {
  let s = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (!s) s = 'app';
  if (/^[0-9]/.test(s)) s = `_${s}`;
  return s;
}

export function bindingsOf(c: Connection): BindingSpec[] {
  const out: BindingSpec[] = [];
  const base = { connectionId: c.id, connectionName: c.name };
  for (const t of c.tools)
    out.push({ ...base, binding: `${c.slug}.${slugify(t.name)}`, name: t.name, kind: 'tool' });
  for (const r of c.resources)
    out.push({ ...base, binding: `${c.slug}.${slugify(r.name)}`, name: r.name, kind: 'resource' });
  for (const p of c.prompts)
    out.push({ ...base, binding: `${c.slug}.${slugify(p.name)}`, name: p.name, kind: 'prompt' });
  return out;
}

/** Connection slugs the runtime serves itself (`files` → `apps.files.read` …); a tenant's would be shadowed. */
const BUILT_IN_CONNECTION_SLUGS: ReadonlySet<string> = new Set(
  FILES_BINDING_NAMES.map((b) => b.slice(0, b.indexOf('.'))),
);

/** A single token (no spaces) with characters other than letters, digits, `_` and `-`. */
const WRITTEN_AS_IDENTIFIER = /^[^\s]*[^A-Za-z0-9_\s-][^\s]*$/;

/**
 * Why the name `written` cannot be the binding part `slug`, in the engine's own text
 * (`invalid binding name: lambda (reserved by Python)`), or undefined. A single token such as
 * `$tools` is the name a program would write, so it must be a plain identifier as written; labels
 * such as "Work calendar" or "list-events" become `work_calendar` / `list_events` (Code Mode's
 * naming). Every part is also checked as a flat name (run_code's tools are globals: `console`).
 */
function bindingPartProblem(written: string, slug: string, qualified: string): string | undefined {
  const trimmed = written.trim();
  if (WRITTEN_AS_IDENTIFIER.test(trimmed)) return validateBindingNames([trimmed]);
  const problem = bindingNameProblem(slug) ?? bindingNameProblem(qualified);
  return problem ? `invalid binding name: ${slug} (${problem})` : undefined;
}

/**
 * Why this connection's names cannot become bindings, or undefined. Checked at registration so a
 * connection that no run could ever use (the engine refuses the same names before a run starts)
 * is refused with the engine's reason instead of failing every run later.
 */
export function reservedNameProblem(input: ConnectionInput): CreateRefusal | undefined {
  const slug = slugify(input.name);
  const called = input.name === slug ? `"${slug}"` : `"${input.name}" (binding name "${slug}")`;
  if (BUILT_IN_CONNECTION_SLUGS.has(slug))
    return {
      ok: false,
      code: 'reserved-connection-name',
      detail: `connection name ${called} is reserved for the built-in workspace bindings`,
    };
  // A placeholder capability checks the connection part as `apps` sees it (`call` is kept there).
  const own = bindingPartProblem(input.name, slug, `${slug}.x`);
  if (own) return { ok: false, code: 'invalid-binding-name', detail: own };
  for (const item of [...input.tools, ...input.resources, ...input.prompts]) {
    const part = slugify(item.name);
    const problem = bindingPartProblem(item.name, part, `${slug}.${part}`);
    if (problem) return { ok: false, code: 'invalid-binding-name', detail: problem };
  }
  return undefined;
}

export type CreateRefusal = {
  ok: false;
  code: 'conflict' | 'reserved-connection-name' | 'invalid-binding-name' | 'connection-quota-exceeded';
  detail: string;
};
