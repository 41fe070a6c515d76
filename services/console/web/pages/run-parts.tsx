/** Pieces of the run page: the App calls table, the attempts timeline, and long text shown capped. */
import { type CodeRunRecord, eventTime, type SseEvent } from '../api.ts';
import { mib, saveText } from '../log-view.tsx';
import { Json, time } from './util.tsx';

type Data = Record<string, unknown>;

function outcomeText(o: CodeRunRecord['calls'][number]['outcome']): string {
  if (o._tag !== 'Done') return o._tag;
  const r = o.result;
  if (r._tag === 'Completed') return 'Completed';
  if (r._tag === 'Failed') return `${r.error.name}: ${r.error.message}`;
  return `Stopped (${r.code})`;
}

/** Text past this many characters is cut in the page, with a marker and a download of the whole. */
const TEXT_LIMIT_CHARS = 64 * 1024;

export function CappedText(props: { text: string; name: string; class?: string }) {
  const { text } = props;
  if (text.length <= TEXT_LIMIT_CHARS) return <pre class={props.class}>{text}</pre>;
  return (
    <>
      <pre class={props.class}>
        {text.slice(0, TEXT_LIMIT_CHARS)}
        <span class="truncation-marker" role="note">
          {` ⋯ cut here: ${mib(text.length - TEXT_LIMIT_CHARS)} more not shown ⋯`}
        </span>
      </pre>
      <button type="button" class="linkish" onClick={() => saveText(props.name, text)}>
        Download all of it ({mib(text.length)})
      </button>
    </>
  );
}

export function CallsTable(props: { record: CodeRunRecord; events: SseEvent[] }) {
  const { record, events } = props;
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
  return (
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
  );
}

export function Attempts(props: { events: SseEvent[] }) {
  const { events } = props;
  const attempts = events.filter((e) => e.event === 'status' && (e.data as Data).attempt !== undefined);
  const ended = events.find((e) => e.event === 'end');
  return (
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
  );
}
