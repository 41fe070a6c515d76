/**
 * Splits a program into comments, strings, numbers, keywords and the rest, in one left-to-right
 * pass: every character is looked at a bounded number of times, so an unclosed `/*`, quote or
 * template costs as much as a closed one (a lazy regular expression retried from every later
 * position made a 600 KB program quadratic). Only the first `limit` characters are tokenized;
 * the caller shows the rest as plain text with a marker.
 */
type TokenKind = 'plain' | 'comment' | 'string' | 'number' | 'keyword';
interface Token {
  kind: TokenKind;
  text: string;
}
interface Tokenized {
  tokens: Token[];
  /** Characters of the program the tokens cover (≤ limit). */
  covered: number;
  /** The program was longer than the limit: the rest is not highlighted. */
  truncated: boolean;
}

/** How much of a program is highlighted; longer programs show the rest as plain text. */
export const HIGHLIGHT_LIMIT_CHARS = 64 * 1024;

const KEYWORDS = new Set(
  'await async break case catch class const continue default do else export extends false finally for function if import in instanceof let new null of return static switch this throw true try typeof undefined var void while yield'.split(
    ' ',
  ),
);

const isDigit = (c: number) => c >= 48 && c <= 57;
const isIdentStart = (c: number) =>
  (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36 || c > 127;
const isIdentPart = (c: number) => isIdentStart(c) || isDigit(c);

export function tokenize(code: string, limit = HIGHLIGHT_LIMIT_CHARS): Tokenized {
  const end = Math.min(code.length, limit);
  const tokens: Token[] = [];
  let plainFrom = 0;
  let i = 0;
  const emit = (kind: TokenKind, from: number, to: number) => {
    if (from > plainFrom) pushPlain(plainFrom, from);
    tokens.push({ kind, text: code.slice(from, to) });
    plainFrom = to;
  };
  const pushPlain = (from: number, to: number) => {
    const last = tokens[tokens.length - 1];
    // Adjacent plain text is merged: one span per run of plain text, not per identifier.
    if (last?.kind === 'plain') last.text += code.slice(from, to);
    else tokens.push({ kind: 'plain', text: code.slice(from, to) });
  };
  while (i < end) {
    const c = code.charCodeAt(i);
    const next = code.charCodeAt(i + 1);
    if (c === 47 && next === 47) {
      // `//` to the end of the line
      let j = code.indexOf('\n', i + 2);
      if (j < 0 || j > end) j = end;
      emit('comment', i, j);
      i = j;
    } else if (c === 47 && next === 42) {
      // `/* … */`, or to the end of the highlighted part when unclosed: found once, never retried
      let j = code.indexOf('*/', i + 2);
      j = j < 0 || j + 2 > end ? end : j + 2;
      emit('comment', i, j);
      i = j;
    } else if (c === 34 || c === 39 || c === 96) {
      // a string: backslash escapes; quotes end at a newline, templates span lines
      let j = i + 1;
      while (j < end) {
        const d = code.charCodeAt(j);
        if (d === 92) j += 2;
        else if (d === c) {
          j++;
          break;
        } else if (d === 10 && c !== 96) break;
        else j++;
      }
      j = Math.min(j, end);
      emit('string', i, j);
      i = j;
    } else if (isDigit(c) && !(i > 0 && isIdentPart(code.charCodeAt(i - 1)))) {
      let j = i + 1;
      while (j < end) {
        const d = code.charCodeAt(j);
        if (isIdentPart(d) || d === 46) j++;
        else if ((d === 43 || d === 45) && (code.charCodeAt(j - 1) | 32) === 101) j++;
        else break;
      }
      emit('number', i, j);
      i = j;
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < end && isIdentPart(code.charCodeAt(j))) j++;
      const word = code.slice(i, j);
      // `x.default` or `obj.if` are property names, not keywords
      if (KEYWORDS.has(word) && code.charCodeAt(i - 1) !== 46) emit('keyword', i, j);
      i = j;
    } else i++;
  }
  if (end > plainFrom) pushPlain(plainFrom, end);
  return { tokens, covered: end, truncated: end < code.length };
}
