/** Cancel and Re-run, offered by the runs list and the run page alike. */
import { useState } from 'preact/hooks';
import { api, problemText, readBoundedRecord } from '../api.ts';

const LIVE = new Set(['Queued', 'Running', 'Waiting']);

export function isLive(status: string): boolean {
  return LIVE.has(status);
}

/**
 * A new run with the same request as far as the record tells it: program, description, session,
 * turn, style and the connections (Apps) it was given.
 */
async function rerun(id: string): Promise<string> {
  const r = await readBoundedRecord(id);
  const created = await api<{ id: string }>('POST', '/v1/runs', {
    code: r.code,
    description: r.reason,
    sessionId: r.session,
    turnId: r.turn,
    ...(r.style ? { style: r.style } : {}),
    ...(r.connections ? { connections: r.connections } : {}),
  });
  return created.id;
}

export function RunActions(props: { id: string; status: string; compact?: boolean }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  async function act(what: 'cancel' | 'rerun') {
    setBusy(true);
    setError('');
    try {
      if (what === 'cancel') await api('POST', `/v1/code-runs/${encodeURIComponent(props.id)}/cancel`);
      else location.hash = `#/runs/${encodeURIComponent(await rerun(props.id))}`;
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  }
  const cls = props.compact ? 'small' : undefined;
  return (
    <span class="run-actions">
      {isLive(props.status) && (
        <button type="button" class={`deny ${cls ?? ''}`} disabled={busy} onClick={() => act('cancel')}>
          Cancel
        </button>
      )}
      <button type="button" class={cls} disabled={busy} onClick={() => act('rerun')}>
        Re-run
      </button>
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}
