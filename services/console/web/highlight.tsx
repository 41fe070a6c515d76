/**
 * A tiny TypeScript highlighter: one regular expression splits the program into comments,
 * strings, numbers, keywords and the rest; Preact renders the spans (text only, never HTML).
 */
import type { JSX } from 'preact';

const TOKEN =
  /(\/\/[^\n]*|\/\*[\s\S]*?\*\/)|(`(?:\\[\s\S]|[^`\\])*`|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?n?\b)|(\b(?:await|async|break|case|catch|const|continue|default|do|else|export|false|finally|for|function|if|import|in|instanceof|let|new|null|of|return|switch|this|throw|true|try|typeof|undefined|var|void|while|yield)\b)/g;

const CLASSES = ['', 'tok-comment', 'tok-string', 'tok-number', 'tok-keyword'] as const;

export function Code(props: { code: string }): JSX.Element {
  const parts: JSX.Element[] = [];
  let last = 0;
  let n = 0;
  for (const m of props.code.matchAll(TOKEN)) {
    const at = m.index ?? 0;
    if (at > last) parts.push(<span key={n++}>{props.code.slice(last, at)}</span>);
    const group = m.findIndex((g, i) => i > 0 && g !== undefined);
    parts.push(
      <span key={n++} class={CLASSES[group] ?? ''}>
        {m[0]}
      </span>,
    );
    last = at + m[0].length;
  }
  if (last < props.code.length) parts.push(<span key={n++}>{props.code.slice(last)}</span>);
  return (
    <pre class="code">
      <code>{parts}</code>
    </pre>
  );
}
