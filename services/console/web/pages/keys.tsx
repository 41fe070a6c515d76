/**
 * API keys of a tenant (platform admins): the list (`GET /v1/admin/tenants/{id}/keys`: prefix,
 * scopes, principal, created, last used, expiry — never a secret), revoke (refused at once
 * everywhere), rotate (a new secret; the old one keeps working for the grace chosen), and create
 * with scopes, principal and an optional expiry. A new secret is shown once, in this page only.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, problemText } from '../api.ts';
import { Problem, time } from './util.tsx';

const KEY_SCOPES = [
  'apps.use',
  'sessions.read',
  'sessions.admin',
  'decisions',
  'platform.admin',
  'workflows',
];

interface KeyInfo {
  id: string;
  prefix: string;
  scopes: string[];
  principal: string;
  created: number;
  lastUsed: number | null;
  expiresAt: number | null;
  previousExpiresAt?: number;
}

function Secret(props: { label: string; secret: string; onDone: () => void }) {
  return (
    <div class="card secret" role="status">
      <h2>{props.label}</h2>
      <p>Copy it now: it is not shown again.</p>
      <pre class="json" data-secret>
        {props.secret}
      </pre>
      <button type="button" class="secondary" onClick={props.onDone}>
        Done
      </button>
    </div>
  );
}

export function KeysPage() {
  const [tenants, setTenants] = useState<Array<{ id: string; name: string }>>([]);
  const [tenant, setTenant] = useState('');
  const [items, setItems] = useState<KeyInfo[] | null>(null);
  const [error, setError] = useState('');
  const [secret, setSecret] = useState<{ label: string; secret: string } | null>(null);
  const [scopes, setScopes] = useState<string[]>(['apps.use', 'sessions.read']);
  const [principal, setPrincipal] = useState('');
  const [expires, setExpires] = useState('');
  const [grace, setGrace] = useState('3600');
  useEffect(() => {
    api<{ items: Array<{ id: string; name: string }> }>('GET', '/v1/admin/tenants').then(
      (r) => {
        setTenants(r.items);
        setTenant((t) => t || r.items[0]?.id || '');
      },
      (err) => setError(problemText(err)),
    );
  }, []);
  const base = `/v1/admin/tenants/${encodeURIComponent(tenant)}/keys`;
  const load = () =>
    api<{ items: KeyInfo[] }>('GET', base).then(
      (r) => {
        setItems(r.items.sort((a, b) => b.created - a.created));
        setError('');
      },
      (err) => setError(problemText(err)),
    );
  useEffect(() => {
    if (tenant) void load();
  }, [tenant]);
  async function act(fn: () => Promise<void>) {
    setError('');
    try {
      await fn();
      await load();
    } catch (err) {
      setError(problemText(err));
    }
  }
  const revoke = (k: KeyInfo) =>
    act(async () => {
      if (!confirm(`Revoke ${k.prefix}…? Requests with it are refused at once.`)) return;
      await api('DELETE', `${base}/${encodeURIComponent(k.id)}`);
    });
  const rotate = (k: KeyInfo) =>
    act(async () => {
      const r = await api<{ key: string }>('POST', `${base}/${encodeURIComponent(k.id)}/rotate`, {
        graceSeconds: Number(grace) || 0,
      });
      setSecret({ label: `New secret for ${k.id}`, secret: r.key });
    });
  const create = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const r = await api<{ key: string; keyId: string }>('POST', base, {
        scopes,
        ...(principal.trim() ? { principal: principal.trim() } : {}),
        ...(expires ? { expiresAt: new Date(expires).getTime() } : {}),
      });
      setSecret({ label: `New key ${r.keyId}`, secret: r.key });
    });
  };
  return (
    <section>
      <h1>API keys</h1>
      <p class="inline">
        <label for="k-tenant">Tenant</label>
        <select id="k-tenant" value={tenant} onChange={(e) => setTenant(e.currentTarget.value)}>
          {tenants.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name} ({t.id})
            </option>
          ))}
        </select>
      </p>
      {error && <Problem>{error}</Problem>}
      {secret && <Secret {...secret} onDone={() => setSecret(null)} />}
      {items && items.length === 0 && <p>No keys.</p>}
      {items && items.length > 0 && (
        <div class="table-wrap">
          <table class="runs keys">
            <caption class="sr-only">Keys of the tenant, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Scopes</th>
                <th scope="col">Principal</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((k) => (
                <tr key={k.id} data-key={k.id}>
                  <td>
                    <code>{k.prefix}…</code>
                    <div class="hint">{k.id}</div>
                  </td>
                  <td data-label="Scopes">{k.scopes.join(', ')}</td>
                  <td data-label="Principal">{k.principal}</td>
                  <td data-label="Created">{time(k.created)}</td>
                  <td data-label="Last used">{k.lastUsed ? time(k.lastUsed) : 'never'}</td>
                  <td data-label="Expires">
                    {k.expiresAt ? time(k.expiresAt) : 'never'}
                    {k.previousExpiresAt && (
                      <div class="hint">old secret until {time(k.previousExpiresAt)}</div>
                    )}
                  </td>
                  <td>
                    <span class="run-actions">
                      <button type="button" class="small" onClick={() => void rotate(k)}>
                        Rotate
                      </button>
                      <button type="button" class="small deny" onClick={() => void revoke(k)}>
                        Revoke
                      </button>
                    </span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class="inline">
        <label for="k-grace">Rotation grace (seconds the old secret keeps working)</label>
        <input
          id="k-grace"
          type="number"
          min="0"
          value={grace}
          onInput={(e) => setGrace(e.currentTarget.value)}
        />
      </p>
      <h2>New key</h2>
      <form class="stack" onSubmit={create}>
        <fieldset class="filters">
          <legend>Scopes</legend>
          {KEY_SCOPES.map((s) => (
            <label key={s}>
              <input
                type="checkbox"
                checked={scopes.includes(s)}
                onChange={() => setScopes((c) => (c.includes(s) ? c.filter((x) => x !== s) : [...c, s]))}
              />{' '}
              {s}
            </label>
          ))}
        </fieldset>
        <p>
          <label for="k-principal">Principal (optional: who the key acts for)</label>
          <input id="k-principal" value={principal} onInput={(e) => setPrincipal(e.currentTarget.value)} />
        </p>
        <p>
          <label for="k-expires">Expires (optional)</label>
          <input
            id="k-expires"
            type="datetime-local"
            value={expires}
            onInput={(e) => setExpires(e.currentTarget.value)}
          />
        </p>
        <button type="submit" disabled={scopes.length === 0}>
          Create key
        </button>
      </form>
    </section>
  );
}
