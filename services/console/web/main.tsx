/** The console's shell: sign-in, navigation and a hash router (no server-side routes to keep). */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, problemText, session } from './api.ts';
import { stopTenantStream, useDecisions } from './live.ts';
import { SettingsPage } from './pages/admin.tsx';
import { ConnectionsPage } from './pages/connections.tsx';
import { DecisionsPage } from './pages/decisions.tsx';
import { HealthPage } from './pages/health.tsx';
import { KeysPage } from './pages/keys.tsx';
import { RunPage } from './pages/run.tsx';
import { RunsPage } from './pages/runs.tsx';
import { HomePage, SessionPage } from './pages/session.tsx';
import { UsagePage } from './pages/usage.tsx';

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/');
    addEventListener('hashchange', on);
    // The effect runs after the first paint: a hash changed in between (a link followed, or a
    // navigation right after sign-in) fired no event here, and the page would stay on the old route.
    on();
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function SignIn(props: { onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError('');
    session.signIn(key.trim());
    try {
      // Any valid key may read the platform settings: the cheapest check that the key works.
      await api('GET', '/v1/platform/settings');
      props.onSignedIn();
    } catch (err) {
      session.signOut();
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="signin">
      <h1>Islet console</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          required
        />
        <p class="hint">Kept in this tab only (session storage); closing the tab signs you out.</p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

async function openQueues() {
  // The board's own page and API calls cannot carry the key: a short-lived cookie scoped to
  // /queues stands in for it, issued only to a key with platform.admin.
  try {
    await api('POST', '/console/board-session');
    location.assign('/queues/');
  } catch (err) {
    alert(problemText(err));
  }
}

function Shell() {
  const hash = useHash();
  const [, path = '', rest = ''] = /^#\/([^/]*)\/?(.*)$/.exec(hash) ?? [];
  const arg = decodeURIComponent(rest);
  const decisions = useDecisions();
  const waiting = decisions.items?.length ?? 0;
  let page = <RunsPage />;
  if (path === 'sessions') page = arg ? <SessionPage id={arg} /> : <HomePage />;
  else if (path === 'runs' && arg) page = <RunPage id={arg} />;
  else if (path === 'decisions') page = <DecisionsPage />;
  else if (path === 'settings') page = <SettingsPage />;
  else if (path === 'connections') page = <ConnectionsPage />;
  else if (path === 'keys') page = <KeysPage />;
  else if (path === 'usage') page = <UsagePage />;
  else if (path === 'health') page = <HealthPage />;
  const link = (to: string, label: string) => (
    <a href={`#/${to}`} aria-current={path === to ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <nav aria-label="Console">
          <strong class="brand">Islet</strong>
          {link('', 'Runs')}
          {link('sessions', 'Sessions')}
          <a href="#/decisions" aria-current={path === 'decisions' ? 'page' : undefined}>
            Decisions
            {waiting > 0 && (
              <span class="count" data-count={waiting}>
                {waiting}
                <span class="sr-only"> waiting</span>
              </span>
            )}
          </a>
          {link('connections', 'Connections')}
          {link('keys', 'Keys')}
          {link('usage', 'Usage')}
          {link('health', 'Health')}
          {link('settings', 'Settings')}
          <button type="button" class="linkish" onClick={openQueues}>
            Queues
          </button>
          <a href="/docs" target="_blank" rel="noopener">
            API reference
          </a>
          <button
            type="button"
            class="linkish"
            onClick={() => {
              session.signOut();
              stopTenantStream();
              location.hash = '#/';
              location.reload();
            }}
          >
            Sign out
          </button>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(Boolean(session.key()));
  return signedIn ? <Shell /> : <SignIn onSignedIn={() => setSignedIn(true)} />;
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
