/**
 * A tenant's connection (App) as stored and as the API returns it (secrets stay sealed and are
 * never returned). The gateway validates input with its zod schema (gateway connections.ts) and
 * stores this shape; the console reads it.
 */

type ConnectionKind = 'http' | 'client' | 'mcp';
type ToolPolicy = 'allow' | 'ask' | 'deny';

interface ConnectionTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown> | undefined;
  policy: ToolPolicy;
}

/** A resource or prompt the connection offers (`mcp`: read through its binding). */
interface ConnectionRead {
  name: string;
  description?: string | undefined;
  /** `mcp` resources: the URI the binding reads. */
  uri?: string | undefined;
  /** `mcp` prompts: the arguments the prompt takes. */
  arguments?:
    | Array<{ name: string; description?: string | undefined; required?: boolean | undefined }>
    | undefined;
}

export interface Connection {
  id: string;
  slug: string;
  createdAt: number;
  name: string;
  kind: ConnectionKind;
  url?: string | undefined;
  tools: ConnectionTool[];
  resources: ConnectionRead[];
  prompts: ConnectionRead[];
  /** `http`, `mcp`: the request headers, sealed (never returned by the API). */
  sealedHeaders?: string | undefined;
  /** `http`: the Standard Webhooks signing secrets, sealed; shown once, at creation or rotation. */
  sealedSigning?: string | undefined;
}
