/** Small shared pieces: status badges, times, JSON blocks, a problem banner. */
import type { ComponentChildren } from 'preact';

export function Status(props: { status: string }) {
  return <span class={`badge status-${props.status.toLowerCase()}`}>{props.status}</span>;
}

export function time(ms: number | undefined): string {
  return ms ? new Date(ms).toLocaleString() : '—';
}

export function duration(fromMs: number, toMs: number): string {
  const s = Math.max(0, toMs - fromMs) / 1000;
  return s < 10 ? `${s.toFixed(2)} s` : s < 120 ? `${s.toFixed(1)} s` : `${Math.round(s / 60)} min`;
}

export function Json(props: { value: unknown }) {
  return <pre class="json">{JSON.stringify(props.value, null, 2) ?? 'undefined'}</pre>;
}

export function Problem(props: { children: ComponentChildren }) {
  return (
    <p class="error" role="alert">
      {props.children}
    </p>
  );
}
