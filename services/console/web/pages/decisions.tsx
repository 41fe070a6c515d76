/**
 * Decisions: the waiting list and the card the documents describe — for wider access the mode and
 * the one-sentence justification, for an App call the connection, capability and arguments — with
 * the answers the API takes (`POST /v1/code-runs/{id}/decisions` `{index, allow, input?, scope?}`):
 * allow once, allow for the session (App calls), deny, allow with input.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Decision, problemText } from '../api.ts';
import { Json, Problem, time } from './util.tsx';

export function DecisionCard(props: { decision: Decision; onAnswered: () => void }) {
  const d = props.decision;
  const [input, setInput] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const escalation = d.capability.action === 'sandbox.escalate';
  const [connection = '', tool = ''] = d.capability.target.split('/');
  async function answer(allow: boolean, withInput?: boolean, scope?: 'session') {
    setBusy(true);
    setError('');
    const body: Record<string, unknown> = { index: d.code.index, allow, ...(scope ? { scope } : {}) };
    if (withInput) {
      try {
        body.input = JSON.parse(input);
      } catch {
        body.input = input;
      }
    }
    try {
      await api('POST', `/v1/code-runs/${encodeURIComponent(d.code.run)}/decisions`, body);
      props.onAnswered();
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }
  const titleId = `decision-${d.id}`;
  return (
    <article class="card decision" aria-labelledby={titleId} data-decision={d.id}>
      <h3 id={titleId}>
        {escalation ? `Wider access: ${d.capability.target}` : `App call: ${d.capability.target}`}
      </h3>
      <dl>
        {escalation ? (
          <>
            <dt>Mode</dt>
            <dd>
              <code>{d.capability.target}</code>
            </dd>
            <dt>Justification</dt>
            <dd class="justification">{d.justification ?? '—'}</dd>
          </>
        ) : (
          <>
            <dt>Connection</dt>
            <dd>
              <code>{d.app?.id ?? connection}</code>
            </dd>
            <dt>Capability</dt>
            <dd>
              <code>{tool || d.capability.target}</code> ({d.capability.action})
            </dd>
            <dt>Arguments</dt>
            <dd>
              <Json value={d.app?.arguments} />
            </dd>
          </>
        )}
        <dt>Run</dt>
        <dd>
          <a href={`#/runs/${encodeURIComponent(d.code.run)}`}>{d.code.run}</a> (call {d.code.index})
        </dd>
        <dt>Asked</dt>
        <dd>
          {time(d.requestedAt)}; expires {time(d.expiresAt)}; the run{' '}
          {d.approval === 'stop' ? 'stopped and replays' : 'holds in place'} after the answer
        </dd>
      </dl>
      <div class="actions">
        <button type="button" class="allow" disabled={busy} onClick={() => answer(true)}>
          Allow once
        </button>
        {!escalation && (
          <button type="button" class="allow" disabled={busy} onClick={() => answer(true, false, 'session')}>
            Allow for this session
          </button>
        )}
        <button type="button" class="deny" disabled={busy} onClick={() => answer(false)}>
          Deny
        </button>
      </div>
      {!escalation && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            void answer(true, true);
          }}
        >
          <label for={`${titleId}-input`}>Answer input (JSON or text)</label>
          <input
            id={`${titleId}-input`}
            value={input}
            onInput={(e) => setInput(e.currentTarget.value)}
            required
          />
          <button type="submit" disabled={busy}>
            Allow with input
          </button>
        </form>
      )}
      {error && <Problem>{error}</Problem>}
    </article>
  );
}

export function DecisionsPage() {
  const [items, setItems] = useState<Decision[] | null>(null);
  const [error, setError] = useState('');
  const load = () =>
    api<{ items: Decision[] }>('GET', '/v1/decisions').then(
      (r) => setItems(r.items),
      (err) => setError(problemText(err)),
    );
  useEffect(() => {
    void load();
  }, []);
  return (
    <section>
      <h1>Waiting decisions</h1>
      <button type="button" onClick={() => void load()}>
        Refresh
      </button>
      {error && <Problem>{error}</Problem>}
      {items?.length === 0 && <p>Nothing is waiting for a decision.</p>}
      {items?.map((d) => (
        <DecisionCard key={d.id} decision={d} onAnswered={() => void load()} />
      ))}
    </section>
  );
}
