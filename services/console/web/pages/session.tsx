/**
 * Sessions: the tenant's list (or one opened by id), then a session's runs live over
 * the session stream (`GET /v1/sessions/{id}/events`: a `run` event per run as it appears or changes).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, problemText, type RunSummary, readSse } from '../api.ts';
import { duration, Problem, Status, time } from './util.tsx';

interface SessionItem {
  sessionId: string;
  principal?: string;
  createdAt: number;
  lastActivity: number;
  runs: { total: number; active: number; Completed: number; Failed: number; Cancelled: number };
}

/** The tenant's sessions (`GET /v1/sessions`), latest activity first, paged; or one opened by id. */
export function HomePage() {
  const [id, setId] = useState('');
  const [items, setItems] = useState<SessionItem[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState('');
  const load = (after?: string) =>
    api<{ items: SessionItem[]; nextCursor: string | null }>(
      'GET',
      `/v1/sessions?limit=50${after ? `&cursor=${encodeURIComponent(after)}` : ''}`,
    ).then(
      (page) => {
        setItems((prev) => (after && prev ? [...prev, ...page.items] : page.items));
        setCursor(page.nextCursor);
      },
      (err) => setError(problemText(err)),
    );
  useEffect(() => {
    void load();
  }, []);
  return (
    <section>
      <h1>Sessions</h1>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          if (id.trim()) location.hash = `#/sessions/${encodeURIComponent(id.trim())}`;
        }}
      >
        <label for="session-id">Session id</label>
        <input id="session-id" value={id} onInput={(e) => setId(e.currentTarget.value)} required />
        <button type="submit">Open</button>
      </form>
      {error && <Problem>{error}</Problem>}
      {items?.length === 0 && <p>No sessions yet.</p>}
      {items && items.length > 0 && (
        <div class="table-wrap">
          <table class="runs sessions">
            <caption class="sr-only">Sessions, latest activity first</caption>
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Principal</th>
                <th scope="col">Runs</th>
                <th scope="col">Last activity</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.sessionId} data-session={s.sessionId}>
                  <td>
                    <a href={`#/sessions/${encodeURIComponent(s.sessionId)}`}>{s.sessionId}</a>
                  </td>
                  <td>{s.principal ?? '—'}</td>
                  <td>
                    {s.runs.total} ({s.runs.active} going, {s.runs.Completed} completed, {s.runs.Failed}{' '}
                    failed, {s.runs.Cancelled} cancelled)
                  </td>
                  <td>{time(s.lastActivity)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && (
        <button type="button" class="more" onClick={() => void load(cursor)}>
          Show older sessions
        </button>
      )}
    </section>
  );
}

export function SessionPage(props: { id: string }) {
  const [runs, setRuns] = useState<Map<string, RunSummary>>(new Map());
  const [error, setError] = useState('');
  const [live, setLive] = useState(false);
  useEffect(() => {
    setRuns(new Map());
    const ac = new AbortController();
    void readSse(
      `/v1/sessions/${encodeURIComponent(props.id)}/events`,
      (e) => {
        setLive(true);
        setError('');
        if (e.event !== 'run') return;
        const run = e.data as RunSummary;
        setRuns((prev) => new Map(prev).set(run.id, run));
      },
      ac.signal,
      (p) => {
        setLive(false);
        setError(p);
      },
    );
    return () => ac.abort();
  }, [props.id]);
  const rows = [...runs.values()].sort((a, b) => b.createdAt - a.createdAt);
  return (
    <section>
      <h1>
        Session <code>{props.id}</code>
      </h1>
      <p class="hint" aria-live="polite">
        {live ? 'Live: runs appear and change here as they happen.' : 'Connecting…'}
      </p>
      {error && <Problem>{error}</Problem>}
      {rows.length === 0 && !error && <p>No runs in this session yet.</p>}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="runs">
            <caption class="sr-only">Runs of the session, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Reason</th>
                <th scope="col">Started</th>
                <th scope="col">Took</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-run={r.id} data-status={r.status}>
                  <td>
                    <a href={`#/runs/${encodeURIComponent(r.id)}`}>{r.reason || r.id}</a>
                  </td>
                  <td>
                    <Status status={r.status} />
                  </td>
                  <td>{r.failure ?? '—'}</td>
                  <td>{time(r.createdAt)}</td>
                  <td>
                    {r.status === 'Running' || r.status === 'Waiting'
                      ? '…'
                      : duration(r.createdAt, r.updatedAt)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
