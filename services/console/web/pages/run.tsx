/**
 * One run: title (its description), status and timings, Cancel / Re-run, waiting decisions, the
 * program, the result text, log lines live as the program prints, App calls and replay attempts.
 * The run's own SSE stream drives it (from the first event, so the history is complete): `log`
 * events go into a bounded buffer shown virtualized; other events refresh the record, coalesced
 * (one read in flight at a time), since a busy run sends thousands of events.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  type BoundedRecord,
  problemText,
  readBoundedRecord,
  readSse,
  type SseEvent,
  session,
} from '../api.ts';
import { Code } from '../highlight.tsx';
import { useDecisions } from '../live.ts';
import { LogBuffer } from '../log-buffer.ts';
import { LogView, saveBlob, saveText } from '../log-view.tsx';
import { DecisionCard } from './decisions.tsx';
import { isLive, RunActions } from './run-actions.tsx';
import { Attempts, CallsTable, CappedText } from './run-parts.tsx';
import { duration, Problem, Status, time } from './util.tsx';

type Data = Record<string, unknown>;

/** The lines of a `log` event: a batch (`lines` or `logs`) or a single line. */
function logLinesOf(data: unknown): Array<{ level: string; text: string }> {
  const d = (data ?? {}) as Data;
  const list = Array.isArray(d.lines) ? d.lines : Array.isArray(d.logs) ? d.logs : [d];
  const out: Array<{ level: string; text: string }> = [];
  for (const l of list as Data[]) {
    if (typeof l?.text === 'string')
      out.push({ level: typeof l.level === 'string' ? l.level : 'log', text: l.text });
    else if (typeof l?.line === 'string')
      out.push({ level: typeof l.level === 'string' ? l.level : 'log', text: l.line });
  }
  return out;
}

export function RunPage(props: { id: string }) {
  const [record, setRecord] = useState<BoundedRecord | null>(null);
  const [events, setEvents] = useState<SseEvent[]>([]);
  const [error, setError] = useState('');
  const [logVersion, setLogVersion] = useState(0);
  const [liveLogs, setLiveLogs] = useState(false);
  const [liveCapped, setLiveCapped] = useState(false);
  const logs = useRef(new LogBuffer());
  const decisions = useDecisions();
  const pending = decisions.items?.filter((d) => d.code.run === props.id) ?? [];

  useEffect(() => {
    setRecord(null);
    setEvents([]);
    setError('');
    setLiveCapped(false);
    logs.current = new LogBuffer();
    setLogVersion((v) => v + 1);
    const ac = new AbortController();
    let inFlight = false;
    let again = false;
    // An ended run's record does not change: once read, the replayed events need no more reads
    // (a run that printed megabytes has a record of megabytes).
    let final = false;
    const refresh = async (): Promise<void> => {
      if (final) return;
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = true;
      try {
        const r = await readBoundedRecord(props.id);
        if (ac.signal.aborted) return;
        const recorded = r.result?.logs ?? [];
        const omitted = r.logsOmitted;
        // The record is the whole truth once the run ended: take its lines when the live stream
        // brought fewer (a page opened late, or lines the stream left out to stay bounded).
        if ((omitted?.totalLines ?? recorded.length) > logs.current.total) {
          const b = new LogBuffer();
          const after = omitted?.after ?? recorded.length;
          for (const l of recorded.slice(0, after)) b.push(l.level, l.text);
          if (omitted) b.gap(omitted.lines, omitted.bytes);
          for (const l of recorded.slice(after)) b.push(l.level, l.text);
          logs.current = b;
          setLogVersion((v) => v + 1);
        }
        setRecord(r);
        if (r.result) final = true;
      } catch (err) {
        setError(problemText(err));
      } finally {
        inFlight = false;
        if (again && !ac.signal.aborted) {
          again = false;
          void refresh();
        }
      }
    };
    let frame = 0;
    const redrawLogs = () => {
      // Many log events arrive per frame: redraw at most once per frame.
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setLogVersion((v) => v + 1);
      });
    };
    void refresh();
    void readSse(
      `/v1/code-runs/${encodeURIComponent(props.id)}/events`,
      (e) => {
        if (e.event === 'log') {
          // Once the ended run's record is read, its lines are the whole output: log events the
          // stream replays after that read (an ended run's stream replays from the start) are
          // lines the page already has, and counting them again overstated the total.
          if (final) return;
          for (const l of logLinesOf(e.data)) logs.current.push(l.level, l.text);
          // The stream stops sending lines past its per-run cap; the record has them at the end.
          if ((e.data as Data | null)?.truncated) setLiveCapped(true);
          setLiveLogs(true);
          redrawLogs();
          return;
        }
        setEvents((prev) => [...prev, e]);
        if (e.event === 'end') setLiveLogs(false);
        void refresh();
      },
      ac.signal,
      (p) => setError(p),
    );
    return () => {
      ac.abort();
      cancelAnimationFrame(frame);
    };
  }, [props.id]);

  if (error && !record) return <Problem>{error}</Problem>;
  if (!record) return <p>Loading…</p>;
  const result = record.result;
  const download = async () => {
    try {
      if (!record.result) {
        // Still running: what the page holds is all there is yet.
        saveText(
          `${props.id}.log`,
          [...logs.current.head, ...logs.current.tailLines()].map((l) => l.text).join('\n'),
        );
        return;
      }
      // The whole output, streamed by the gateway as text: never the record's megabytes of JSON.
      const res = await fetch(`/v1/code-runs/${encodeURIComponent(props.id)}/logs`, {
        headers: { authorization: `Bearer ${session.key() ?? ''}` },
      });
      if (!res.ok) throw new Error(`the output could not be read (HTTP ${res.status})`);
      saveBlob(`${props.id}.log`, await res.blob());
    } catch (err) {
      setError(problemText(err));
    }
  };
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
          )}{' '}
          <RunActions id={record.id} status={record.status} />
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
            <DecisionCard key={d.id} decision={d} onAnswered={() => decisions.drop(d.id)} />
          ))}
        </section>
      )}
      {record.status === 'Waiting' && pending.length === 0 && decisions.error && (
        <p class="hint">This run waits for a decision; {decisions.error}</p>
      )}
      <section aria-labelledby="program-h">
        <h2 id="program-h">Program</h2>
        <Code code={record.code} />
      </section>
      <section aria-labelledby="result-h">
        <h2 id="result-h">Result</h2>
        {record.text !== undefined ? (
          <CappedText class="result" text={record.text} name={`${record.id}-result.txt`} />
        ) : (
          <p>Not finished yet.</p>
        )}
        {result?._tag === 'Failed' && <p class="failure-message">{result.message}</p>}
      </section>
      {liveCapped && !result && (
        <p class="hint truncation-marker" role="note">
          The live output stopped here to stay bounded; every line kept shows when the run ends.
        </p>
      )}
      <LogView
        buffer={logs.current}
        version={logVersion}
        live={liveLogs && isLive(record.status)}
        onDownload={() => void download()}
      />
      <CallsTable record={record} events={events} />
      <Attempts events={events} />
    </article>
  );
}
