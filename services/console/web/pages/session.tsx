/**
 * Sessions: pick one by id (recent ones are remembered in this tab), then watch its runs live over
 * the session stream (`GET /v1/sessions/{id}/events`: a `run` event per run as it appears or changes).
 */
import { useEffect, useState } from 'preact/hooks';
import { type RunSummary, readSse } from '../api.ts';
import { duration, Problem, Status, time } from './util.tsx';

const RECENT = 'islet.recentSessions';
const recent = (): string[] => JSON.parse(sessionStorage.getItem(RECENT) ?? '[]') as string[];
function remember(id: string) {
  sessionStorage.setItem(RECENT, JSON.stringify([id, ...recent().filter((s) => s !== id)].slice(0, 10)));
}

export function HomePage() {
  const [id, setId] = useState('');
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
      {recent().length > 0 && (
        <>
          <h2>Recently opened</h2>
          <ul>
            {recent().map((s) => (
              <li key={s}>
                <a href={`#/sessions/${encodeURIComponent(s)}`}>{s}</a>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

export function SessionPage(props: { id: string }) {
  const [runs, setRuns] = useState<Map<string, RunSummary>>(new Map());
  const [error, setError] = useState('');
  const [live, setLive] = useState(false);
  useEffect(() => {
    remember(props.id);
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
