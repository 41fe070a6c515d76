/**
 * The sandbox host's stdin read through `onread` (host-input.ts), in a child process fed over a
 * socket pair as the engine feeds a host: every message arrives whole and in order — frames cut
 * across reads, and a message larger than one read (its pieces copied out of the one read buffer
 * before the next read fills it) — with no readable stream push and no tick for any of them; the
 * engine closing stdin ends it.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { encodeMessage } from './frame.ts';

const CHILD = `
import { Readable } from 'node:stream';
import { FrameReader } from ${JSON.stringify(new URL('./frame.ts', import.meta.url).href)};
import { readStdinFrames } from ${JSON.stringify(new URL('./host-input.ts', import.meta.url).href)};
let ticks = 0;
let pushes = 0;
const nextTick = process.nextTick;
process.nextTick = (...args) => { ticks++; return nextTick(...args); };
const push = Readable.prototype.push;
Readable.prototype.push = function (...args) { pushes++; return push.apply(this, args); };
const seen = [];
const reader = new FrameReader((e) => {
  seen.push(e.type === 'message' ? e.message : { error: e.message });
  // The ticks and pushes up to each message, before anything of the end ran.
  seen[seen.length - 1].before = { ticks, pushes };
});
readStdinFrames(reader, () => {
  process.nextTick = nextTick;
  Readable.prototype.push = push;
  process.stdout.write(JSON.stringify(seen));
});
process.stdout.write('ready');
`;

describe('the host reads its frames as they arrive', () => {
  it('takes whole messages in order, cut or large, with no stream push or tick', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    const ready = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: string) => {
        out += d;
        if (out === 'ready') resolve();
      }),
    );
    const exited = new Promise((r) => child.on('exit', r));
    await ready;
    out = '';
    const a = { t: 'result', id: 0, valueJson: '{"n":1}' };
    const b = { t: 'result', id: 1, valueJson: JSON.stringify('é'.repeat(100_000)) };
    const c = { t: 'end', kind: 'stop' };
    const first = Buffer.concat(encodeMessage(a));
    const cut = Buffer.concat([...encodeMessage(a), ...encodeMessage(c)]);
    const pause = () => new Promise((r) => setTimeout(r, 20));
    child.stdin.write(first);
    await pause();
    // A frame cut across two reads: its first part kept by the reader until the rest comes.
    child.stdin.write(cut.subarray(0, first.length + 3));
    await pause();
    child.stdin.write(cut.subarray(first.length + 3));
    await pause();
    // ~200 KB: several reads of 64 KiB into the same buffer.
    child.stdin.write(Buffer.concat(encodeMessage(b)));
    await pause();
    child.stdin.end();
    await exited;
    const seen = JSON.parse(out) as { before: { ticks: number; pushes: number } }[];
    expect(seen.map(({ before: _, ...m }) => m)).toEqual([a, a, c, b]);
    for (const m of seen) expect(m.before).toEqual({ ticks: 0, pushes: 0 });
  });
});
