import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { encodeMessage, type FrameEvent, FrameReader, readFramesInTicks } from './frame.ts';

function collect(limits = { maxFrameBytes: 16, maxMessageBytes: 64 }) {
  const events: FrameEvent[] = [];
  const reader = new FrameReader((e) => events.push(e), limits);
  return { events, reader };
}

describe('length-delimited JSON frames', () => {
  it('round-trips messages split over several frames and arbitrary chunk boundaries', () => {
    const limits = { maxFrameBytes: 16, maxMessageBytes: 1024 };
    const messages = [{ t: 'a' }, { t: 'logs', lines: [['log', 'é'.repeat(40)]] }, { t: 'z', n: 1 }];
    const bytes = Buffer.concat(messages.flatMap((m) => encodeMessage(m, limits)));
    const { events, reader } = collect(limits);
    for (let i = 0; i < bytes.length; i += 3) reader.push(bytes.subarray(i, i + 3));
    expect(events).toEqual(messages.map((message) => ({ type: 'message', message })));
  });

  it('refuses a frame larger than the limit, a message larger than the limit, bad flags and non-JSON', () => {
    const big = collect();
    const header = Buffer.alloc(5);
    header.writeUInt32BE(17, 0);
    header.writeUInt8(1, 4);
    big.reader.push(header);
    expect(big.events).toEqual([
      { type: 'error', message: 'frame of 17 bytes exceeds the limit of 16 bytes' },
    ]);

    const long = collect();
    for (const f of encodeMessage({ s: 'x'.repeat(100) }, { maxFrameBytes: 16, maxMessageBytes: 1000 })) {
      long.reader.push(f);
    }
    expect(long.events).toEqual([{ type: 'error', message: 'message exceeds the limit of 64 bytes' }]);

    const flag = collect();
    flag.reader.push(Buffer.from([0, 0, 0, 1, 7, 0x31]));
    expect(flag.events).toEqual([{ type: 'error', message: 'bad frame flag 7' }]);

    const junk = collect();
    junk.reader.push(Buffer.from([0, 0, 0, 3, 1, 0x7b, 0x7b, 0x7b]));
    expect(junk.events).toEqual([{ type: 'error', message: 'frame payload is not JSON' }]);
    // After an error the reader ignores everything.
    junk.reader.push(Buffer.concat(encodeMessage({ ok: true })));
    expect(junk.events.length).toBe(1);
  });

  it('encodes a message that fits one frame as one buffer (one write), header and text', () => {
    const frames = encodeMessage({ t: 'done', v: 'é' });
    expect(frames.length).toBe(1);
    const text = JSON.stringify({ t: 'done', v: 'é' });
    const frame = frames[0]!;
    expect(frame.readUInt32BE(0)).toBe(Buffer.byteLength(text));
    expect(frame.readUInt8(4)).toBe(1);
    expect(frame.subarray(5).toString('utf8')).toBe(text);
    // Exactly at the frame limit still one frame; one byte over, two.
    const limits = { maxFrameBytes: Buffer.byteLength(text), maxMessageBytes: 1024 };
    expect(encodeMessage({ t: 'done', v: 'é' }, limits).length).toBe(1);
    expect(encodeMessage({ t: 'done', v: 'éx' }, limits).length).toBe(4);
  });

  it('refuses to encode a message over the limit', () => {
    expect(() => encodeMessage({ s: 'x'.repeat(100) }, { maxFrameBytes: 16, maxMessageBytes: 64 })).toThrow(
      /exceeds 64 bytes/,
    );
  });
});

describe("the sandbox host's frames read from the tick queue", () => {
  it("handles each chunk's frames after the stream's 'data' event, in order, with none of the stream's frames on the stack", async () => {
    const input = new PassThrough();
    const seen: { message: unknown; inData: boolean; streamFrames: boolean }[] = [];
    let inData = false;
    input.on('data', () => {
      // Listeners run in order: this one's flag spans the reader's own listener, added after.
      inData = true;
      queueMicrotask(() => {
        inData = false;
      });
    });
    const reader = new FrameReader((e) => {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 50;
      const stack = new Error('where').stack ?? '';
      Error.stackTraceLimit = limit;
      seen.push({
        message: e.type === 'message' ? e.message : e,
        inData,
        streamFrames: /node:internal\/streams|node:events/.test(stack),
      });
    });
    readFramesInTicks(input, reader);
    const [a, b, c] = [
      { t: 'run', n: 1 },
      { t: 'end', n: 2 },
      { t: 'result', n: 3 },
    ];
    input.write(Buffer.concat([...encodeMessage(a), ...encodeMessage(b)]));
    input.write(Buffer.concat(encodeMessage(c)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen.map((s) => s.message)).toEqual([a, b, c]);
    // Not inside the stream's event (where the host's turns once ran, 10 frames deep).
    expect(seen.every((s) => !s.inData && !s.streamFrames)).toBe(true);
  });
});
