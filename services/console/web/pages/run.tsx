/**
 * One run: title (its description), status and timings, waiting decisions, the program, the result
 * text, log lines by level, App calls and replay attempts. The run's own SSE stream drives every
 * refresh (from the first event, so the history of calls and attempts is complete).
 */
import { useEffect, useState } from 'preact/hooks';
import {
  api,
  type CodeRunRecord,
  client,
  type Decision,
  eventTime,
  type LogLineRecord,
  problemText,
  readSse,
  type SseEvent,
} from '../api.ts';
import { Code } from '../highlight.tsx';
import { DecisionCard } from './decisions.tsx';
import { duration, Json, Problem, Status, time } from './util.tsx';

type Data = Record<string, unknown>;

function Logs(props: { logs: LogLineRecord[] }) {
  const levels = [...new Set(props.logs.map((l) => l.level))];
  const [only, setOnly] = useState<string>('all');
  const shown = only === 'all' ? props.logs : props.logs.filter((l) => l.level === only);
  return (
    <section aria-labelledby="logs-h">
      <h2 id="logs-h">Logs ({props.logs.length})</h2>
      {levels.length > 1 && (
        <fieldset class="filters">
          <legend>Level</legend>
          {['all', ...levels].map((l) => (
            <label key={l}>
              <input type="radio" name="level" checked={only === l} onChange={() => setOnly(l)} /> {l}
            </label>
          ))}
        </fieldset>
      )}
      {shown.length === 0 ? (
        <p>No log lines.</p>
      ) : (
        <ol class="logs">
          {shown.map((l, i) => (
            <li key={i} class={`log-${l.level}`}>
              <span class="level">{l.level}</span> <span>{l.text}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

function outcomeText(o: CodeRunRecord['calls'][number]['outcome']): string {
  if (o._tag !== 'Done') return o._tag;
  const r = o.result;
  if (r._tag === 'Completed') return 'Completed';
  if (r._tag === 'Failed') return `${r.error.name}: ${r.error.message}`;
  return `Stopped (${r.code})`;
}

export function RunPage(props: { id: string }) {
  const [record, setRecord] = useState<CodeRunRecord | null>(null);
  const [events, setEvents] = useState<SseEvent[]>([]);
  const [pending, setPending] = useState<Decision[]>([]);
  const [error, setError] = useState('');
  const [decisionsError, setDecisionsError] = useState('');
  useEffect(() => {
    setRecord(null);
    setEvents([]);
    setError('');
    const ac = new AbortController();
    const refresh = () =>
      client()
        .getRun(props.id)
        .then(
          (r) => setRecord(r as CodeRunRecord),
          (err) => setError(problemText(err)),
        );
    const refreshDecisions = () =>
      api<{ items: Decision[] }>('GET', '/v1/decisions').then(
        (r) => setPending(r.items.filter((d) => d.code.run === props.id)),
        (err) => setDecisionsError(problemText(err)),
      );
    void refresh().then(refreshDecisions);
    void readSse(
      `/v1/code-runs/${encodeURIComponent(props.id)}/events`,
      (e) => {
        setEvents((prev) => [...prev, e]);
        void refresh();
        if (e.event.startsWith('decision') || e.event === 'status') void refreshDecisions();
      },
      ac.signal,
      (p) => setError(p),
    );
    return () => ac.abort();
  }, [props.id]);

  if (error && !record) return <Problem>{error}</Problem>;
  if (!record) return <p>Loading…</p>;
  const result = record.result;
  const attempts = events.filter((e) => e.event === 'status' && (e.data as Data).attempt !== undefined);
  const callEvents = new Map<number, SseEvent>();
  const argsOf = new Map<number, unknown>();
  const decided = new Map<number, string>();
  for (const e of events) {
    const d = e.data as Data;
    if (e.event === 'call') callEvents.set(Number(d.index), e);
    if (e.event === 'call' && 'arguments' in d) argsOf.set(Number(d.index), d.arguments);
    if (e.event === 'call.requested') argsOf.set(Number(d.index), d.arguments);
    if (e.event === 'decision.needed') {
      const code = d.code as Data | undefined;
      const app = d.app as Data | undefined;
      if (app) argsOf.set(Number(code?.index), app.arguments);
      decided.set(Number(code?.index), 'asked');
    }
    if (e.event === 'decision.answered') decided.set(Number(d.index), d.allow ? 'allowed' : 'denied');
  }
  const ended = events.find((e) => e.event === 'end');
  return (
    <article>
      <header class="run-head">
        <h1>{record.reason || record.id}</h1>
        <p>
          <Status status={record.status} />{' '}
          {result?._tag === 'Failed' && (
            <span class="failure">
              {result.reason}
              {result.kind ? ` (${result.kind})` : ''}
            </span>
          )}
        </p>
        <dl class="facts">
          <dt>Run</dt>
          <dd>
            <code>{record.id}</code>
          </dd>
          <dt>Session</dt>
          <dd>
            <a href={`#/sessions/${encodeURIComponent(record.session)}`}>{record.session}</a> · turn{' '}
            {record.turn} · call {record.callId}
          </dd>
          <dt>Created</dt>
          <dd>{time(record.createdAt)}</dd>
          <dt>Updated</dt>
          <dd>{time(record.updatedAt)}</dd>
          <dt>Took</dt>
          <dd>{result ? duration(record.createdAt, record.updatedAt) : 'still going'}</dd>
        </dl>
      </header>
      {error && <Problem>{error}</Problem>}
      {pending.length > 0 && (
        <section aria-labelledby="pending-h">
          <h2 id="pending-h">Waiting for your decision</h2>
          {pending.map((d) => (
            <DecisionCard
              key={d.id}
              decision={d}
              onAnswered={() => setPending((p) => p.filter((x) => x.id !== d.id))}
            />
          ))}
        </section>
      )}
      {record.status === 'Waiting' && pending.length === 0 && decisionsError && (
        <p class="hint">This run waits for a decision; {decisionsError}</p>
      )}
      <section aria-labelledby="program-h">
        <h2 id="program-h">Program</h2>
        <Code code={record.code} />
      </section>
      <section aria-labelledby="result-h">
        <h2 id="result-h">Result</h2>
        {record.text !== undefined ? <pre class="result">{record.text}</pre> : <p>Not finished yet.</p>}
        {result?._tag === 'Failed' && <p class="failure-message">{result.message}</p>}
      </section>
      {result && <Logs logs={result.logs} />}
      <section aria-labelledby="calls-h">
        <h2 id="calls-h">App calls ({record.calls.length})</h2>
        {record.calls.length === 0 ? (
          <p>No App calls.</p>
        ) : (
          <div class="table-wrap">
            <table class="calls">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Binding</th>
                  <th scope="col">Arguments</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Decision</th>
                  <th scope="col">Time</th>
                </tr>
              </thead>
              <tbody>
                {record.calls.map((c) => {
                  const ev = callEvents.get(c.index);
                  const ms = ev ? (ev.data as Data).durationMs : undefined;
                  return (
                    <tr key={c.index} data-call={c.index}>
                      <td>{c.index}</td>
                      <td>
                        <code>{c.binding}</code>
                        {c.source && <div class="hint">{c.source.connectionName}</div>}
                      </td>
                      <td>{argsOf.has(c.index) ? <Json value={argsOf.get(c.index)} /> : '—'}</td>
                      <td class="outcome">{outcomeText(c.outcome)}</td>
                      <td>{decided.get(c.index) ?? 'policy'}</td>
                      <td>
                        {ev ? time(eventTime(ev.id)) : '—'}
                        {typeof ms === 'number' && <div class="hint">{ms} ms</div>}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="attempts-h">
        <h2 id="attempts-h">Attempts ({attempts.length})</h2>
        <p class="hint">
          A run that stopped for a decision, or whose runner went away, starts again from the top; journaled
          calls return their saved results and are never sent twice.
        </p>
        <ol class="attempts">
          {events
            .filter((e) => e.event === 'status' || e.event === 'end' || e.event.startsWith('decision'))
            .map((e) => {
              const d = e.data as Data;
              const what =
                e.event === 'status'
                  ? `${String(d.status)}${d.attempt !== undefined ? ` — attempt ${String(d.attempt)}` : ''}${d.resumed ? ' (resumed after a decision)' : ''}${d.atCall !== undefined ? ` at call ${String(d.atCall)}` : ''}`
                  : e.event === 'end'
                    ? `ended ${String(d.status)}`
                    : e.event === 'decision.answered'
                      ? `decision on call ${String(d.index)}: ${d.allow ? 'allowed' : 'denied'}`
                      : 'decision needed';
              return (
                <li key={e.id}>
                  <time>{new Date(eventTime(e.id)).toLocaleTimeString()}</time> {what}
                </li>
              );
            })}
        </ol>
        {ended && <p class="hint">The event stream has ended.</p>}
      </section>
    </article>
  );
}
