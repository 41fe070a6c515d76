/**
 * A run's log lines, virtualized: only the rows in sight (plus a margin) are in the DOM, whatever
 * the output's size; the lines a `LogBuffer` dropped show as one marker row with a download link.
 * Follows the end while the reader is at the bottom, like a terminal.
 */
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type LogBuffer, logRows } from './log-buffer.ts';

const OVERSCAN = 20;

export function mib(chars: number): string {
  return chars < 1024 * 1024 ? `${Math.ceil(chars / 1024)} KiB` : `${(chars / 1024 / 1024).toFixed(1)} MiB`;
}

function rowHeightPx(): number {
  return Math.round(Number.parseFloat(getComputedStyle(document.documentElement).fontSize) * 1.5) || 24;
}

export function LogView(props: {
  buffer: LogBuffer;
  version: number;
  onDownload?: () => void;
  live: boolean;
}) {
  const buf = props.buffer;
  const [only, setOnly] = useState('all');
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(480);
  const viewport = useRef<HTMLDivElement>(null);
  const atEnd = useRef(true);
  const rowPx = useMemo(rowHeightPx, []);
  const rows = useMemo(() => logRows(buf, only), [buf, only, props.version]);
  const levels = [...buf.levels];

  useLayoutEffect(() => {
    const el = viewport.current;
    if (!el) return;
    setHeight(el.clientHeight || 480);
    if (atEnd.current) el.scrollTop = el.scrollHeight;
  }, [rows.length]);

  const first = Math.max(0, Math.floor(scrollTop / rowPx) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / rowPx) + OVERSCAN);
  const visible = rows.slice(first, last);
  return (
    <section aria-labelledby="logs-h" class="logs-section">
      <h2 id="logs-h">
        Logs ({buf.total.toLocaleString()}
        {buf.total > 0 ? `, ${mib(buf.totalChars)}` : ''}){props.live && <span class="live-dot"> live</span>}
      </h2>
      <div class="log-tools">
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
        {props.onDownload && buf.total > 0 && (
          <button type="button" class="linkish" onClick={props.onDownload}>
            Download the full output
          </button>
        )}
      </div>
      {buf.skippedLines > 0 && (
        <p class="hint log-omitted" role="note">
          {buf.skippedLines.toLocaleString()} lines ({mib(buf.skippedChars)}) in the middle are not shown here
          {props.onDownload ? '; the download has every line.' : '.'}
        </p>
      )}
      {rows.length === 0 ? (
        <p>No log lines{props.live ? ' yet' : ''}.</p>
      ) : (
        <div
          class="log-viewport"
          ref={viewport}
          role="log"
          aria-label="Log lines"
          onScroll={(e) => {
            const el = e.currentTarget;
            atEnd.current = el.scrollTop + el.clientHeight >= el.scrollHeight - rowPx;
            setScrollTop(el.scrollTop);
          }}
        >
          <ol class="logs" style={{ height: `${rows.length * rowPx}px` }}>
            {visible.map((r, i) => {
              const top = `${(first + i) * rowPx}px`;
              if ('gap' in r)
                return (
                  <li key="gap" class="log-gap" style={{ top, height: `${rowPx}px` }}>
                    ⋯ {r.gap.lines.toLocaleString()} lines ({mib(r.gap.chars)}) not shown here
                    {props.onDownload && (
                      <>
                        {' — '}
                        <button type="button" class="linkish" onClick={props.onDownload}>
                          download the full output
                        </button>
                      </>
                    )}
                  </li>
                );
              return (
                <li
                  key={r.n}
                  class={`log-${r.line.level}`}
                  style={{ top, height: `${rowPx}px` }}
                  data-line={r.n}
                >
                  <span class="ln">{r.n}</span> <span class="level">{r.line.level}</span>{' '}
                  <span class="text">{r.line.text}</span>
                  {r.line.cut > 0 && (
                    <span class="truncation-marker"> … {r.line.cut.toLocaleString()} more characters</span>
                  )}
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </section>
  );
}

/** Saves text as a file through a short-lived blob URL (no server round trip, nothing inline). */
export function saveText(name: string, text: string): void {
  saveBlob(name, new Blob([text], { type: 'text/plain' }));
}

/** Saves a blob (a download the page fetched) as a file through a short-lived blob URL. */
export function saveBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
