/**
 * Server-Sent Events (the WHATWG event-stream format) read from a fetch body: each dispatched event
 * as `{id, event, data}`, `data` parsed as JSON when it is JSON. Comments (heartbeats) and `retry:`
 * are skipped.
 */
export interface StreamEvent {
  /** Pass back as Last-Event-ID to resume exactly after this event. */
  id: string | undefined;
  /** The event type (`message` when the stream named none). */
  event: string;
  data: unknown;
}

function parseData(lines: string[]): unknown {
  const text = lines.join('\n');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export async function* parseEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  let buffer = '';
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline = buffer.search(/\r\n|\n|\r/);
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(
          buffer[newline] === '\r' && buffer[newline + 1] === '\n' ? newline + 2 : newline + 1,
        );
        newline = buffer.search(/\r\n|\n|\r/);
        if (line === '') {
          if (data.length > 0) yield { id, event: event || 'message', data: parseData(data) };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? '' : line.slice(colon + 1);
        if (text.startsWith(' ')) text = text.slice(1);
        if (field === 'data') data.push(text);
        else if (field === 'event') event = text;
        else if (field === 'id' && !text.includes('\0')) id = text;
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
