/**
 * Length-delimited JSON frames between the engine and a sandbox host process.
 *
 * A frame is a 4-byte big-endian payload length, a 1-byte flag (1 = last frame of the message,
 * 0 = more follow) and the payload. A message is UTF-8 JSON text split over one or more frames, so
 * no single frame exceeds `maxFrameBytes` while a message (a 64 MiB log line, a large binding result)
 * may reach `maxMessageBytes`. Anything else is a protocol error: the reader stops and reports it.
 */

const FRAME_HEADER_BYTES = 5;
/** Largest payload of one frame. */
const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** Largest message (all frames of it together). */
const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

export interface FrameLimits {
  maxFrameBytes: number;
  maxMessageBytes: number;
}

export const DEFAULT_FRAME_LIMITS: FrameLimits = {
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
};

/** Encodes one message into frames (a list of buffers ready to write in order). */
export function encodeMessage(message: unknown, limits: FrameLimits = DEFAULT_FRAME_LIMITS): Buffer[] {
  return encodeText(JSON.stringify(message), limits);
}

/**
 * Encodes one message already made as its JSON text (run-frames.ts `outcomeFrame`: a call's
 * outcome made as text, with no object to stringify), under the same limits as `encodeMessage`.
 */
export function encodeText(json: string, limits: FrameLimits = DEFAULT_FRAME_LIMITS): Buffer[] {
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > limits.maxMessageBytes) {
    throw new Error(`message of ${bytes} bytes exceeds ${limits.maxMessageBytes} bytes`);
  }
  if (bytes <= limits.maxFrameBytes) {
    // The common case, one frame: header and text encoded into one buffer, so one copy of the text
    // and one write (one wake-up of the reader) per message.
    const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bytes);
    frame.writeUInt32BE(bytes, 0);
    frame.writeUInt8(1, 4);
    frame.write(json, FRAME_HEADER_BYTES, 'utf8');
    return [frame];
  }
  const payload = Buffer.from(json, 'utf8');
  const out: Buffer[] = [];
  let offset = 0;
  do {
    const end = Math.min(payload.length, offset + limits.maxFrameBytes);
    const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
    header.writeUInt32BE(end - offset, 0);
    header.writeUInt8(end === payload.length ? 1 : 0, 4);
    out.push(header, payload.subarray(offset, end));
    offset = end;
  } while (offset < payload.length);
  return out;
}

export type FrameEvent = { type: 'message'; message: unknown } | { type: 'error'; message: string };

/**
 * Incremental reader. Feed it chunks as they arrive; it calls `onEvent` for each complete message and
 * once for the first protocol error, after which it ignores all input.
 */
export class FrameReader {
  private readonly limits: FrameLimits;
  private readonly onEvent: (event: FrameEvent) => void;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private failed = false;

  constructor(onEvent: (event: FrameEvent) => void, limits: FrameLimits = DEFAULT_FRAME_LIMITS) {
    this.onEvent = onEvent;
    this.limits = limits;
  }

  push(chunk: Buffer): void {
    if (this.failed) return;
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    while (!this.failed && this.bufferedBytes >= FRAME_HEADER_BYTES) {
      const head = this.peek(FRAME_HEADER_BYTES);
      const length = head.readUInt32BE(0);
      const flag = head.readUInt8(4);
      if (length > this.limits.maxFrameBytes) {
        this.fail(`frame of ${length} bytes exceeds the limit of ${this.limits.maxFrameBytes} bytes`);
        return;
      }
      if (flag !== 0 && flag !== 1) {
        this.fail(`bad frame flag ${flag}`);
        return;
      }
      if (this.partsBytes + length > this.limits.maxMessageBytes) {
        this.fail(`message exceeds the limit of ${this.limits.maxMessageBytes} bytes`);
        return;
      }
      if (this.bufferedBytes < FRAME_HEADER_BYTES + length) return;
      const frame = this.take(FRAME_HEADER_BYTES + length).subarray(FRAME_HEADER_BYTES);
      this.parts.push(frame);
      this.partsBytes += frame.length;
      if (flag === 1) {
        const payload = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
        this.parts = [];
        this.partsBytes = 0;
        let message: unknown;
        try {
          message = JSON.parse(payload.toString('utf8'));
        } catch {
          this.fail('frame payload is not JSON');
          return;
        }
        this.onEvent({ type: 'message', message });
      }
    }
  }

  /**
   * What the reader keeps of earlier pushes (a frame not whole yet) copied off `shared`, the memory
   * the caller reads into and fills again (host-input.ts): nothing to do when every frame was whole.
   */
  ownCopies(shared: ArrayBufferLike): void {
    for (let i = 0; i < this.buffered.length; i++)
      if (this.buffered[i]!.buffer === shared) this.buffered[i] = Buffer.from(this.buffered[i]!);
    for (let i = 0; i < this.parts.length; i++)
      if (this.parts[i]!.buffer === shared) this.parts[i] = Buffer.from(this.parts[i]!);
  }

  private fail(message: string): void {
    this.failed = true;
    this.buffered = [];
    this.parts = [];
    this.onEvent({ type: 'error', message });
  }

  private peek(n: number): Buffer {
    const first = this.buffered[0]!;
    if (first.length >= n) return first.subarray(0, n);
    const all = Buffer.concat(this.buffered);
    this.buffered = [all];
    return all.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.buffered = rest.length > 0 ? [rest] : [];
    this.bufferedBytes = rest.length;
    return out;
  }
}

/**
 * Feeds `reader` from `input`'s chunks, each from the tick queue rather than inside the stream's
 * 'data' event (in order: one tick a chunk, first in, first out). The sandbox host's turns run
 * from the frames' handler, and a turn that ends its run disposes its isolate inside `applySync`,
 * for which isolated-vm captures this thread's JavaScript stack (up to 10 frames, each optimized
 * one decoded) into the error it throws: the stream's own frames were half of it (README, round 39
 * `dispose`).
 */
export function readFramesInTicks(input: NodeJS.ReadableStream, reader: FrameReader): void {
  const read = (chunk: Buffer) => reader.push(chunk);
  input.on('data', (chunk: Buffer) => process.nextTick(read, chunk));
}
