/**
 * What the console keeps live for the whole tab: one tenant-wide SSE stream (`GET /v1/events`)
 * shared by every page (streams per key are capped, so a tab holds one, not one per widget), and
 * the waiting decisions it keeps current — the navigation's badge, the inbox and the run page all
 * read the same list, so an answered card disappears everywhere at once.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Decision, problemText, readSse, type SseEvent } from './api.ts';

const TENANT_EVENTS_PATH = '/v1/events';

type Listener = (e: SseEvent) => void;
const listeners = new Set<Listener>();
let stream: AbortController | null = null;
let streamState: { live: boolean; error: string } = { live: false, error: '' };
const stateListeners = new Set<() => void>();

function setStreamState(s: typeof streamState) {
  streamState = s;
  for (const f of stateListeners) f();
}

function ensureStream() {
  if (stream) return;
  stream = new AbortController();
  void readSse(
    TENANT_EVENTS_PATH,
    (e) => {
      if (!streamState.live) setStreamState({ live: true, error: '' });
      for (const f of listeners) f(e);
    },
    stream.signal,
    (p, status) => {
      // A gateway without the tenant stream: read the same facts every few seconds instead.
      if (status === 404) startPolling();
      else setStreamState({ live: false, error: p });
    },
    () => {
      setStreamState({ live: true, error: '' });
      // Whatever changed while the stream was down is read once; the stream carries the rest.
      void loadDecisions();
      for (const f of listeners) f({ id: '', event: 'open', data: {} });
    },
  );
}

const POLL_MS = 2000;
let poll: ReturnType<typeof setInterval> | undefined;
const polled = new Map<string, string>();

/**
 * The fallback when the gateway has no tenant stream: the newest runs and the waiting decisions
 * are read every POLL_MS, and each run that appeared or changed is handed to the listeners as the
 * stream's `run` event would be.
 */
function startPolling() {
  if (poll) return;
  setStreamState({ live: true, error: '' });
  const tick = async () => {
    void loadDecisions();
    try {
      const page = await api<{ items: Array<Record<string, unknown>> }>('GET', '/v1/runs?limit=50');
      for (const item of page.items.reverse()) {
        const id = String(item.id);
        const stamp = `${String(item.status)}:${String(item.endedAt ?? '')}`;
        if (polled.get(id) === stamp) continue;
        polled.set(id, stamp);
        for (const f of listeners) f({ id: '', event: 'run', data: item });
      }
    } catch {}
  };
  void tick();
  poll = setInterval(() => void tick(), POLL_MS);
}

/** Ends the tab's stream (sign-out). */
export function stopTenantStream() {
  stream?.abort();
  stream = null;
  clearInterval(poll);
  poll = undefined;
}

/** Calls `fn` for every event of the tenant stream while the component is mounted. */
export function useTenantEvents(fn: Listener): { live: boolean; error: string } {
  const [state, setState] = useState(streamState);
  useEffect(() => {
    ensureStream();
    listeners.add(fn);
    const onState = () => setState(streamState);
    stateListeners.add(onState);
    return () => {
      listeners.delete(fn);
      stateListeners.delete(onState);
    };
  }, [fn]);
  return state;
}

// ---- decisions: one list for the tab ----

let decisions: Decision[] | null = null;
let decisionsError = '';
const decisionListeners = new Set<() => void>();
let loading: Promise<void> | null = null;
let reloadAgain = false;

function publish() {
  for (const f of decisionListeners) f();
}

async function loadDecisions(): Promise<void> {
  if (loading) {
    reloadAgain = true;
    return loading;
  }
  loading = (async () => {
    do {
      reloadAgain = false;
      try {
        decisions = (await api<{ items: Decision[] }>('GET', '/v1/decisions')).items;
        decisionsError = '';
      } catch (err) {
        decisionsError = problemText(err);
      }
    } while (reloadAgain);
    loading = null;
    publish();
  })();
  return loading;
}

/** Whether a tenant event can change the waiting list: a decision asked or answered, or a run ending. */
function touchesDecisions(e: SseEvent, pending: readonly Decision[] | null): boolean {
  if (e.event.startsWith('decision')) return true;
  if (!e.event.startsWith('run') && e.event !== 'end' && e.event !== 'status') return false;
  const d = (e.data ?? {}) as { id?: string; runId?: string; status?: string };
  const id = d.id ?? d.runId;
  // A run that starts waiting asks for a decision; one that ends makes its decisions moot.
  if (d.status === 'Waiting') return true;
  return Boolean(id && pending?.some((x) => x.code.run === id));
}

const onTenantEvent: Listener = (e) => {
  if (touchesDecisions(e, decisions)) void loadDecisions();
};

/** The tenant's waiting decisions, kept current by the tenant stream (no Refresh). */
export function useDecisions(): { items: Decision[] | null; error: string; drop: (id: string) => void } {
  const [, setTick] = useState(0);
  const stream = useTenantEvents(onTenantEvent);
  useEffect(() => {
    const f = () => setTick((t) => t + 1);
    decisionListeners.add(f);
    void loadDecisions();
    return () => {
      decisionListeners.delete(f);
    };
  }, []);
  return {
    items: decisions,
    error: decisionsError || (stream.error ? `live updates paused: ${stream.error}` : ''),
    drop: (id: string) => {
      decisions = decisions?.filter((d) => d.id !== id) ?? null;
      publish();
      void loadDecisions();
    },
  };
}
