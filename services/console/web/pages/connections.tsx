/**
 * The tenant's connections (Apps): create, edit in place (each tool's policy allow / ask / deny,
 * the url, an mcp server's headers), delete. Header values are write-only: the API returns their
 * names only, and the form never shows a value back.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type ConnectionView, problemText } from '../api.ts';
import { Problem, time } from './util.tsx';

type View = ConnectionView & { headers?: string[] };

/** `Name: value` lines → a header object (blank lines skipped). */
function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

function ConnectionCard(props: { c: View; onChanged: (c: View | null) => void }) {
  const { c } = props;
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const [url, setUrl] = useState(c.url ?? '');
  const [headers, setHeaders] = useState('');
  const path = `/v1/connections/${encodeURIComponent(c.id)}`;
  async function save(body: unknown, what: string) {
    setError('');
    setSaved('');
    try {
      props.onChanged(await api<View>('PATCH', path, body));
      setSaved(what);
    } catch (err) {
      setError(problemText(err));
    }
  }
  async function remove() {
    if (!confirm(`Delete the connection ${c.name}? Programs calling apps.${c.slug} fail from now on.`))
      return;
    try {
      await api('DELETE', path);
      props.onChanged(null);
    } catch (err) {
      setError(problemText(err));
    }
  }
  return (
    <article class="card" aria-labelledby={`c-${c.id}`} data-connection={c.id}>
      <h2 id={`c-${c.id}`}>
        {c.name} <span class="hint">({c.kind})</span>
      </h2>
      <p class="hint">
        <code>{c.id}</code> · binding prefix <code>apps.{c.slug}</code> · created {time(c.createdAt)}
      </p>
      {c.kind !== 'client' && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            void save({ url }, 'URL saved.');
          }}
        >
          <label for={`u-${c.id}`}>URL</label>
          <input
            id={`u-${c.id}`}
            type="url"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
            required
          />
          <button type="submit" class="small">
            Save URL
          </button>
        </form>
      )}
      {c.kind === 'mcp' && (
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void save({ headers: parseHeaders(headers) }, 'Headers replaced.').then(() => setHeaders(''));
          }}
        >
          <p>
            <label for={`h-${c.id}`}>
              Headers (write-only; set now: {c.headers?.length ? c.headers.join(', ') : 'none'}) — one{' '}
              <code>Name: value</code> per line replaces them all
            </label>
            <textarea
              id={`h-${c.id}`}
              rows={2}
              value={headers}
              autocomplete="off"
              onInput={(e) => setHeaders(e.currentTarget.value)}
            />
          </p>
          <button type="submit" class="small">
            Replace headers
          </button>
        </form>
      )}
      {c.tools.length > 0 && (
        <div class="table-wrap">
          <table class="tools">
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">Policy</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {c.tools.map((t) => (
                <tr key={t.name} data-tool={t.name}>
                  <td>
                    <code>{t.name}</code>
                  </td>
                  <td>
                    <select
                      aria-label={`Policy of ${t.name}`}
                      class={`policy-${t.policy}`}
                      value={t.policy}
                      onChange={(e) =>
                        void save(
                          { tools: [{ name: t.name, policy: e.currentTarget.value }] },
                          `${t.name}: ${e.currentTarget.value}.`,
                        )
                      }
                    >
                      <option value="allow">allow</option>
                      <option value="ask">ask</option>
                      <option value="deny">deny</option>
                    </select>
                  </td>
                  <td>{t.description ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="actions">
        <button type="button" class="small deny" onClick={() => void remove()}>
          Delete connection
        </button>
      </div>
      {saved && <p role="status">{saved}</p>}
      {error && <Problem>{error}</Problem>}
    </article>
  );
}

function CreateConnection(props: { onCreated: (c: View) => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState('http');
  const [url, setUrl] = useState('');
  const [tools, setTools] = useState('');
  const [headers, setHeaders] = useState('');
  const [error, setError] = useState('');
  async function create(e: Event) {
    e.preventDefault();
    setError('');
    try {
      const list = tools
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((p) => p[0])
        .map(([toolName, policy]) => ({ name: toolName, policy: policy ?? 'allow' }));
      const c = await api<View>('POST', '/v1/connections', {
        name,
        kind,
        ...(kind !== 'client' ? { url } : {}),
        ...(kind === 'mcp' && headers.trim() ? { headers: parseHeaders(headers) } : {}),
        tools: list,
      });
      props.onCreated(c);
      setName('');
      setUrl('');
      setTools('');
      setHeaders('');
    } catch (err) {
      setError(problemText(err));
    }
  }
  return (
    <details class="card">
      <summary>New connection</summary>
      <form class="stack" onSubmit={create}>
        <p>
          <label for="n-name">Name (its binding prefix: apps.&lt;name&gt;)</label>
          <input id="n-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        </p>
        <p>
          <label for="n-kind">Kind</label>
          <select id="n-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            <option value="http">http (the gateway POSTs each call)</option>
            <option value="mcp">mcp (a Streamable HTTP MCP server)</option>
            <option value="client">client (the caller answers on the run's stream)</option>
          </select>
        </p>
        {kind !== 'client' && (
          <p>
            <label for="n-url">URL</label>
            <input
              id="n-url"
              type="url"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
              required
            />
          </p>
        )}
        {kind === 'mcp' && (
          <p>
            <label for="n-headers">Headers (write-only), one Name: value per line</label>
            <textarea
              id="n-headers"
              rows={2}
              value={headers}
              onInput={(e) => setHeaders(e.currentTarget.value)}
            />
          </p>
        )}
        <p>
          <label for="n-tools">Tools, one per line: name and policy (allow, ask or deny)</label>
          <textarea id="n-tools" rows={3} value={tools} onInput={(e) => setTools(e.currentTarget.value)} />
        </p>
        <button type="submit">Create connection</button>
        {error && <Problem>{error}</Problem>}
      </form>
    </details>
  );
}

export function ConnectionsPage() {
  const [items, setItems] = useState<View[] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api<{ items: View[] }>('GET', '/v1/connections').then(
      (r) => setItems(r.items),
      (err) => setError(problemText(err)),
    );
  }, []);
  return (
    <section>
      <h1>Connections</h1>
      <CreateConnection onCreated={(c) => setItems((prev) => [...(prev ?? []), c])} />
      {error && <Problem>{error}</Problem>}
      {items?.length === 0 && <p>No connections yet.</p>}
      {items?.map((c) => (
        <ConnectionCard
          key={c.id}
          c={c}
          onChanged={(next) =>
            setItems((prev) =>
              next
                ? (prev ?? []).map((x) => (x.id === c.id ? next : x))
                : (prev ?? []).filter((x) => x.id !== c.id),
            )
          }
        />
      ))}
    </section>
  );
}
