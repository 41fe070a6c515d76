/**
 * What the CLI writes where. A program's output is the program author's text, and a terminal
 * obeys control sequences in it (OSC 52 writes the clipboard, CSI 2J clears the screen, a bare CR
 * overwrites a line to hide what came before): on a TTY every C0 and C1 control except newline and
 * tab is shown as `\xNN` instead, unless the user asked for `--raw`. Piped output is left as it is.
 */

export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface InStream extends AsyncIterable<Buffer | string> {
  isTTY?: boolean;
}

export interface CliIo {
  stdout: OutStream;
  stderr: OutStream;
  stdin: InStream;
}

const hex = (code: number) => `\\x${code.toString(16).padStart(2, '0')}`;

/** C0 (but newline and tab), DEL and C1 controls as visible `\xNN` text. */
export function escapeControls(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const control = (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
    if (!control) continue;
    out += text.slice(from, i) + hex(code);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** Writes text that came from a program: escaped on a terminal unless `raw`. */
export function writeProgramText(stream: OutStream, text: string, raw: boolean): void {
  stream.write(stream.isTTY && !raw ? escapeControls(text) : text);
}

/** The whole of stdin as UTF-8 (the program when neither --code nor --file names it). */
export async function readAll(stream: InStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
