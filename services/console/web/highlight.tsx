/**
 * The program, highlighted: `tokenize` (one linear pass) covers a bounded prefix and Preact renders
 * the spans (text only, never HTML). Past the prefix the program is shown as one plain text node,
 * after a visible marker, so a huge program costs one DOM node, not one per token.
 */
import type { JSX } from 'preact';
import { useMemo } from 'preact/hooks';
import { HIGHLIGHT_LIMIT_CHARS, tokenize } from './highlight-tokens.ts';

const CLASSES = {
  plain: undefined,
  comment: 'tok-comment',
  string: 'tok-string',
  number: 'tok-number',
  keyword: 'tok-keyword',
} as const;

export function Code(props: { code: string; limit?: number }): JSX.Element {
  const limit = props.limit ?? HIGHLIGHT_LIMIT_CHARS;
  const { tokens, covered, truncated } = useMemo(() => tokenize(props.code, limit), [props.code, limit]);
  return (
    <pre class="code" data-highlighted-chars={covered}>
      <code>
        {tokens.map((t, n) => (
          <span key={n} class={CLASSES[t.kind]}>
            {t.text}
          </span>
        ))}
        {truncated && (
          <>
            <span class="truncation-marker" role="note">
              {` ⋯ highlighting stops after ${covered.toLocaleString()} of ${props.code.length.toLocaleString()} characters; the rest is plain text ⋯ `}
            </span>
            <span class="unhighlighted">{props.code.slice(covered)}</span>
          </>
        )}
      </code>
    </pre>
  );
}
