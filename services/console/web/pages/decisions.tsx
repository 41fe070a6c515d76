/**
 * Decisions: the live inbox and the card — the App's name and tool, the run's description, the
 * program around the call, the arguments, for wider access the mode and the justification, and
 * the real deadline counting down — with the answers the API takes (`POST
 * /v1/code-runs/{id}/decisions` `{index, allow, input?, scope?, reason?}`): allow once, allow for the
 * session (App calls), deny with a reason, allow with input. The list is the tab's shared one
 * (`useDecisions`): kept current by the tenant stream, so an answered card leaves every view.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Decision, problemText } from '../api.ts';
import { useDecisions } from '../live.ts';
import { countdown, useDecisionContext } from './decision-context.ts';
import { Json, Problem, time } from './util.tsx';

function Countdown(props: { at: number; what: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const left = props.at - now;
  return (
    <span class={left < 30_000 ? 'deadline urgent' : 'deadline'} data-deadline={props.at}>
      {countdown(left)} — {props.what} at {new Date(props.at).toLocaleTimeString()}
    </span>
  );
}

export function DecisionCard(props: { decision: Decision; onAnswered: () => void }) {
  const d = props.decision;
  const ctx = useDecisionContext(d);
  const [input, setInput] = useState('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const escalation = d.capability.action === 'sandbox.escalate';
  async function answer(allow: boolean, extra: Record<string, unknown> = {}) {
    setBusy(true);
    setError('');
    try {
      await api('POST', `/v1/code-runs/${encodeURIComponent(d.code.run)}/decisions`, {
        index: d.code.index,
        allow,
        ...extra,
      });
      props.onAnswered();
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }
  const titleId = `decision-${d.id}`;
  const who = ctx.appName ?? d.app?.id ?? '';
  return (
    <article class="card decision" aria-labelledby={titleId} data-decision={d.id}>
      <h3 id={titleId}>
        {escalation ? (
          `Wider access: ${d.capability.target}`
        ) : (
          <>
            {who} · <code>{ctx.tool}</code>
          </>
        )}
      </h3>
      {ctx.description && <p class="run-description">{ctx.description}</p>}
      <p class="hint">
        Deadline: <Countdown at={ctx.deadline.at} what={ctx.deadline.what} />
      </p>
      <dl>
        {escalation ? (
          <>
            <dt>Mode</dt>
            <dd>
              <code>{d.capability.target}</code>
            </dd>
          </>
        ) : (
          <>
            <dt>App</dt>
            <dd>
              {who} <span class="hint">({d.capability.target})</span>
            </dd>
            <dt>Arguments</dt>
            <dd>
              <Json value={d.app?.arguments} />
            </dd>
          </>
        )}
        {d.justification !== undefined && (
          <>
            <dt>Justification</dt>
            <dd class="justification">{d.justification}</dd>
          </>
        )}
        <dt>Run</dt>
        <dd>
          <a href={`#/runs/${encodeURIComponent(d.code.run)}`}>{d.code.run}</a> (call {d.code.index}); asked{' '}
          {time(d.requestedAt)}; the run {d.approval === 'stop' ? 'stopped and replays' : 'holds in place'}{' '}
          after the answer
        </dd>
      </dl>
      {ctx.excerpt && ctx.excerpt.length > 0 && (
        <pre class="excerpt">
          {ctx.excerpt.map(([n, text, here]) => (
            <span key={n} class={here ? 'here' : undefined}>
              <span class="ln">{n}</span> {text}
              {'\n'}
            </span>
          ))}
        </pre>
      )}
      <div class="actions">
        <button type="button" class="allow" disabled={busy} onClick={() => answer(true)}>
          Allow once
        </button>
        {!escalation && (
          <button
            type="button"
            class="allow"
            disabled={busy}
            onClick={() => answer(true, { scope: 'session' })}
          >
            Allow for this session
          </button>
        )}
      </div>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void answer(false, reason.trim() ? { reason: reason.trim() } : {});
        }}
      >
        <label for={`${titleId}-reason`}>Reason (the program sees it)</label>
        <input id={`${titleId}-reason`} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        <button type="submit" class="deny" disabled={busy}>
          Deny
        </button>
      </form>
      {!escalation && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            let value: unknown = input;
            try {
              value = JSON.parse(input);
            } catch {}
            void answer(true, { input: value });
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
  const { items, error, drop } = useDecisions();
  return (
    <section>
      <h1>Waiting decisions{items ? ` (${items.length})` : ''}</h1>
      <p class="hint" aria-live="polite">
        Live: new decisions appear here as runs ask; answered ones leave every open console.
      </p>
      {error && <Problem>{error}</Problem>}
      {items?.length === 0 && <p>Nothing is waiting for a decision.</p>}
      {items?.map((d) => (
        <DecisionCard key={d.id} decision={d} onAnswered={() => drop(d.id)} />
      ))}
    </section>
  );
}
