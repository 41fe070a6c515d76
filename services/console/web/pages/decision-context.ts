/**
 * What a decision card shows beside the request itself: the App's display name (from the tenant's
 * connections), the run's description and limits (from its record), the lines of the program
 * around the call, and the real deadline. Fetched once per connection list / run and shared by
 * every card (cards come and go as the stream says).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type CodeRunRecord, type ConnectionView, client, type Decision } from '../api.ts';

let connections: Promise<ConnectionView[]> | null = null;
const runs = new Map<string, Promise<CodeRunRecord | null>>();

/** The tenant's connections; `fresh` refetches (a card naming a connection the list lacks: added since). */
function connectionList(fresh = false): Promise<ConnectionView[]> {
  if (fresh) connections = null;
  connections ??= api<{ items: ConnectionView[] }>('GET', '/v1/connections').then(
    (r) => r.items,
    () => {
      connections = null;
      return [];
    },
  );
  return connections;
}

async function findConnection(id: string): Promise<ConnectionView | undefined> {
  if (!id) return undefined;
  return (
    (await connectionList()).find((c) => c.id === id) ?? (await connectionList(true)).find((c) => c.id === id)
  );
}

function runRecord(id: string): Promise<CodeRunRecord | null> {
  let p = runs.get(id);
  if (!p) {
    p = client()
      .getRun(id)
      .then(
        (r) => r as CodeRunRecord,
        () => {
          runs.delete(id); // a failed read is not remembered: the next card asks again
          return null;
        },
      );
    runs.set(id, p);
    if (runs.size > 200) runs.delete(runs.keys().next().value as string);
  }
  return p;
}

interface DecisionContext {
  appName?: string;
  tool: string;
  description?: string;
  /** Lines around the call: [line number, text, is the call's line]. */
  excerpt?: Array<[number, string, boolean]>;
  /** When the answer stops mattering, ms since epoch, and why. */
  deadline: { at: number; what: string };
}

/** The lines around the first place the program names the binding (±`around` lines). */
function excerptAround(code: string, needles: string[], around = 3): Array<[number, string, boolean]> {
  let at = -1;
  for (const n of needles) {
    if (!n) continue;
    at = code.indexOf(n);
    if (at >= 0) break;
  }
  if (at < 0) return [];
  // Count lines up to the call once, then take a window: bounded by the window, not the program.
  let line = 0;
  for (let i = code.indexOf('\n'); i >= 0 && i < at; i = code.indexOf('\n', i + 1)) line++;
  const lines: Array<[number, string, boolean]> = [];
  let start = 0;
  for (let n = 0; n < line - around; n++) start = code.indexOf('\n', start) + 1;
  let pos = start;
  for (let n = Math.max(0, line - around); n <= line + around; n++) {
    const nl = code.indexOf('\n', pos);
    const text = code.slice(pos, nl < 0 ? undefined : nl);
    lines.push([n + 1, text.length > 300 ? `${text.slice(0, 300)}…` : text, n === line]);
    if (nl < 0) break;
    pos = nl + 1;
  }
  return lines;
}

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');

export function useDecisionContext(d: Decision): DecisionContext {
  const escalation = d.capability.action === 'sandbox.escalate';
  const [connectionId = '', tool = ''] = escalation ? [] : d.capability.target.split('/');
  const [conn, setConn] = useState<ConnectionView | undefined>();
  const [run, setRun] = useState<CodeRunRecord | null>(null);
  useEffect(() => {
    let live = true;
    void findConnection(connectionId).then((c) => live && setConn(c));
    void runRecord(d.code.run).then((r) => live && setRun(r));
    return () => {
      live = false;
    };
  }, [connectionId, d.code.run]);
  const code = d.code.code || run?.code || '';
  const toolSlug = slug(tool);
  const needles = escalation
    ? []
    : [
        conn ? `apps.${conn.slug}.${toolSlug}` : '',
        `.${toolSlug}(`,
        toolSlug ? `${toolSlug}(` : '',
        'apps.call(',
      ];
  const declared = (d as Decision & { deadline?: number }).deadline;
  const timeoutMs = run?.limits?.timeoutMs;
  let deadline: DecisionContext['deadline'] = { at: d.expiresAt, what: 'the decision expires' };
  if (typeof declared === 'number') deadline = { at: declared, what: "the run's time budget ends" };
  else if (
    d.approval === 'hold' &&
    run &&
    typeof timeoutMs === 'number' &&
    run.createdAt + timeoutMs < d.expiresAt
  )
    // A run that holds in place keeps spending its budget while it waits: that is the real end.
    deadline = { at: run.createdAt + timeoutMs, what: "the run's time budget ends" };
  return {
    ...(conn ? { appName: conn.name } : {}),
    tool: escalation ? d.capability.target : tool,
    ...(run ? { description: run.reason } : {}),
    ...(escalation ? {} : { excerpt: excerptAround(code, needles) }),
    deadline,
  };
}

export function countdown(ms: number): string {
  if (ms <= 0) return 'passed';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s left`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m} min ${s % 60} s left`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${m % 60} min left` : `${Math.floor(h / 24)} days left`;
}
