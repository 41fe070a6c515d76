/**
 * The host's frames on a real stdout pipe (a child process, as the engine spawns a host): written
 * straight to the pipe, not through stdout's stream (its JavaScript was a share of a host's own
 * code tiered up by V8, test/bench/README.md round 33 `host-rss`), in order and whole, a message
 * larger than the pipe holds included while the reader is not reading.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FrameReader } from './frame.ts';

const dir = mkdtempSync(join(tmpdir(), 'islet-host-output-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BIG = 4 * 1024 * 1024;

/** Runs `send` in a child with piped stdout; its messages as read, and how often it used stdout's stream. */
async function childSends(
  sent: unknown[],
  holdUntilSent: boolean,
): Promise<{ messages: unknown[]; streamWrites: number }> {
  const script = join(dir, 'child.mjs');
  writeFileSync(
    script,
    `import { send } from ${JSON.stringify(new URL('./host-output.ts', import.meta.url).href)};
let streamWrites = 0;
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (...args) => { streamWrites++; return write(...args); };
for (const m of ${JSON.stringify(sent)}) send(m);
process.stderr.write(JSON.stringify({ streamWrites }));
`,
  );
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', '--disable-warning=ExperimentalWarning', script],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    const messages: unknown[] = [];
    const reader = new FrameReader((e) => messages.push(e.type === 'message' ? e.message : e));
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    // Not read until the child has sent everything (its stderr line comes after its sends), when
    // asked: the big message then fills the pipe whatever the load, and its rest waits in the
    // child's stream. (A paused stream reads no more than its high-water mark: far below 4 MiB.)
    child.stdout!.pause();
    if (holdUntilSent)
      await new Promise((r) => {
        child.stderr!.on('data', () => {
          if (stderr.includes('}')) r(undefined);
        });
        child.once('exit', r);
      });
    child.stdout!.on('data', (c: Buffer) => reader.push(c));
    child.stdout!.resume();
    const code = await new Promise((r) => child.on('close', r));
    expect(code, stderr).toBe(0);
    return { messages, streamWrites: (JSON.parse(stderr) as { streamWrites: number }).streamWrites };
  } finally {
    child.kill('SIGKILL');
  }
}

describe("the host's frames on stdout", () => {
  it("go straight to the pipe while it has room, without stdout's stream", async () => {
    const sent = [{ t: 'ready', pid: 1 }, { t: 'logs', lines: [['log', 'a line']] }, { t: 'turn' }];
    const { messages, streamWrites } = await childSends(sent, false);
    expect(messages).toEqual(sent);
    expect(streamWrites).toBe(0);
  });

  it('hand what the full pipe does not take, and what follows it, to the stream: whole and in order', async () => {
    const sent = [{ t: 'ready', pid: 1 }, { t: 'logs', lines: [['log', 'x'.repeat(BIG)]] }, { t: 'turn' }];
    const { messages, streamWrites } = await childSends(sent, true);
    expect(messages).toEqual(sent);
    // The big one's rest, and the frame after it (queued behind it).
    expect(streamWrites).toBe(2);
  });
});
