/**
 * The console's home: every run of the tenant across sessions, newest first, filterable, paged by
 * cursor (`GET /v1/runs`), and live — a run submitted anywhere appears at the top, and rows change
 * status in place, from the tab's tenant stream (`run` events), with no reload.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, problemText, type SseEvent } from '../api.ts';
import { useTenantEvents } from '../live.ts';
import { isLive, RunActions } from './run-actions.tsx';
import { duration, Problem, Status, time } from './util.tsx';

interface RunRow {
  id: string;
  status: string;
  description: string;
  session: string;
  principal: string;
  style: string;
  createdAt: number;
  updatedAt: number;
  failure?: string;
}

type Loose = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** One item of `GET /v1/runs` or one `run` event, whichever names it uses. */
function toRow(x: Loose): RunRow | null {
  if (typeof x.id !== 'string' || typeof x.status !== 'string') return null;
  const createdAt = Number(x.createdAt ?? 0);
  // The list names a failed run's failure kind (`none` when it completed); the streams its reason.
  const kind = str(x.kind) === 'none' ? '' : str(x.kind);
  const failure = str(x.failure) || str((x.result as Loose | undefined)?.reason) || kind;
  return {
    id: x.id,
    status: x.status,
    description: str(x.description) || str(x.reason),
    session: str(x.sessionId) || str(x.session),
    principal: str(x.principal),
    style: str(x.style),
    createdAt,
    updatedAt: Number(x.updatedAt ?? x.endedAt ?? createdAt),
    ...(failure ? { failure } : {}),
  };
}

const STATUSES = ['Running', 'Waiting', 'Completed', 'Failed', 'Cancelled'] as const;

interface RunFilters {
  status: string[];
  sessionId: string;
  principal: string;
  q: string;
  style: string;
}
const EMPTY: RunFilters = { status: [], sessionId: '', principal: '', q: '', style: '' };

function matches(r: RunRow, f: RunFilters): boolean {
  if (f.status.length > 0 && !f.status.includes(r.status)) return false;
  if (f.sessionId && r.session !== f.sessionId) return false;
  if (f.principal && r.principal && r.principal !== f.principal) return false;
  if (f.style && r.style && r.style !== f.style) return false;
  if (f.q && !r.description.toLowerCase().includes(f.q.toLowerCase())) return false;
  return true;
}

/**
 * `rows` with one run's summary applied: its row updated in place (unless the row is newer: an event
 * kept across a page load may be older than the page), or added when it matches.
 */
function applyRow(rows: RunRow[], row: RunRow, f: RunFilters): RunRow[] {
  const i = rows.findIndex((r) => r.id === row.id);
  if (i >= 0) {
    if (rows[i]!.updatedAt > row.updatedAt) return rows;
    const next = rows.slice();
    next[i] = { ...rows[i]!, ...row, principal: row.principal || rows[i]!.principal };
    return next;
  }
  if (!matches(row, f)) return rows;
  return [row, ...rows].sort((a, b) => b.createdAt - a.createdAt);
}

function query(f: RunFilters, cursor?: string): string {
  const p = new URLSearchParams();
  for (const s of f.status) p.append('status', s);
  if (f.sessionId) p.set('sessionId', f.sessionId);
  if (f.principal) p.set('principal', f.principal);
  if (f.q) p.set('q', f.q);
  if (f.style) p.set('style', f.style);
  p.set('limit', '50');
  if (cursor) p.set('cursor', cursor);
  return p.toString();
}

function Took(props: { row: RunRow }) {
  const [now, setNow] = useState(Date.now());
  const running = isLive(props.row.status);
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [running]);
  return (
    <>
      {running
        ? `${duration(props.row.createdAt, now)} so far`
        : duration(props.row.createdAt, props.row.updatedAt)}
    </>
  );
}

export function RunsPage() {
  const [filters, setFilters] = useState<RunFilters>(EMPTY);
  const [draft, setDraft] = useState<RunFilters>(EMPTY);
  const [rows, setRows] = useState<RunRow[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  // The first page's latest read and the run events that arrived since it was sent: the page may
  // have been read before them (a run created and started meanwhile), so they are applied over it.
  // An older read answered after a newer one is dropped (a reconnect reads again while one is out).
  const reading = useRef<{ missed: RunRow[] } | null>(null);
  const load = useCallback(async (f: RunFilters, after?: string) => {
    setBusy(true);
    const read = after ? null : { missed: [] as RunRow[] };
    if (read) reading.current = read;
    try {
      const page = await api<{ items: Loose[]; nextCursor: string | null }>(
        'GET',
        `/v1/runs?${query(f, after)}`,
      );
      if (read) {
        if (reading.current !== read) return;
        reading.current = null;
      }
      const got = page.items.map(toRow).filter((r): r is RunRow => r !== null);
      setRows((prev) => {
        if (read || !prev) return (read?.missed ?? []).reduce((acc, row) => applyRow(acc, row, f), got);
        const seen = new Set(prev.map((r) => r.id));
        return [...prev, ...got.filter((r) => !seen.has(r.id))];
      });
      setCursor(page.nextCursor ?? null);
      setError('');
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }, []);
  useEffect(() => {
    void load(filters);
  }, [filters, load]);

  const onEvent = useCallback(
    (e: SseEvent) => {
      if (e.event === 'open') {
        // Reconnected: what changed meanwhile is read once.
        void load(filters);
        return;
      }
      // `run`, or a finer name (`run.created`, `run.status`): any run event carrying a summary.
      if (e.event !== 'run' && !e.event.startsWith('run.')) return;
      const row = toRow(e.data as Loose);
      if (!row) return;
      reading.current?.missed.push(row);
      setRows((prev) => (prev ? applyRow(prev, row, filters) : prev));
    },
    [filters, load],
  );
  const stream = useTenantEvents(onEvent);

  const toggle = (s: string) =>
    setDraft((d) => ({
      ...d,
      status: d.status.includes(s) ? d.status.filter((x) => x !== s) : [...d.status, s],
    }));
  const text = (k: 'sessionId' | 'principal' | 'q', label: string) => (
    <p>
      <label for={`f-${k}`}>{label}</label>
      <input
        id={`f-${k}`}
        value={draft[k]}
        onInput={(e) => setDraft({ ...draft, [k]: e.currentTarget.value })}
      />
    </p>
  );
  return (
    <section>
      <h1>Runs</h1>
      <p class="hint" aria-live="polite">
        {stream.live
          ? 'Live: new runs appear at the top and rows change as runs go.'
          : stream.error || 'Connecting…'}
      </p>
      <details class="filters-form" open={!matchMedia('(max-width: 40rem)').matches}>
        <summary>
          Filters
          {filters !== EMPTY && <span class="hint"> (some applied)</span>}
        </summary>
        <form
          aria-label="Filter runs"
          onSubmit={(e) => {
            e.preventDefault();
            setFilters({
              ...draft,
              sessionId: draft.sessionId.trim(),
              principal: draft.principal.trim(),
              q: draft.q.trim(),
            });
          }}
        >
          <fieldset class="filters">
            <legend>Status</legend>
            {STATUSES.map((s) => (
              <label key={s}>
                <input type="checkbox" checked={draft.status.includes(s)} onChange={() => toggle(s)} /> {s}
              </label>
            ))}
          </fieldset>
          <div class="filter-fields">
            {text('q', 'Description contains')}
            {text('sessionId', 'Session')}
            {text('principal', 'Principal')}
            <p>
              <label for="f-style">Style</label>
              <select
                id="f-style"
                value={draft.style}
                onChange={(e) => setDraft({ ...draft, style: e.currentTarget.value })}
              >
                <option value="">any</option>
                <option value="run_code">run_code</option>
                <option value="code-mode">code mode</option>
                <option value="skill">skill</option>
              </select>
            </p>
          </div>
          <div class="actions">
            <button type="submit">Apply filters</button>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setDraft(EMPTY);
                setFilters(EMPTY);
              }}
            >
              Clear
            </button>
          </div>
        </form>
      </details>
      {error && <Problem>{error}</Problem>}
      {rows?.length === 0 && !error && <p>No runs match.</p>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table class="runs all-runs">
            <caption class="sr-only">Runs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Session</th>
                <th scope="col">Principal</th>
                <th scope="col">Started</th>
                <th scope="col">Took</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-run={r.id} data-status={r.status}>
                  <td>
                    <a href={`#/runs/${encodeURIComponent(r.id)}`}>{r.description || r.id}</a>
                    {r.style && <span class="hint"> · {r.style}</span>}
                  </td>
                  <td>
                    <Status status={r.status} />
                    {r.failure && <div class="hint">{r.failure}</div>}
                  </td>
                  <td data-label="Session">
                    {r.session ? (
                      <a href={`#/sessions/${encodeURIComponent(r.session)}`}>{r.session}</a>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td data-label="Principal">{r.principal || '—'}</td>
                  <td data-label="Started">{time(r.createdAt)}</td>
                  <td data-label="Took">
                    <Took row={r} />
                  </td>
                  <td>
                    <RunActions id={r.id} status={r.status} compact />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && (
        <button type="button" class="more" disabled={busy} onClick={() => void load(filters, cursor)}>
          Show older runs
        </button>
      )}
    </section>
  );
}
