/**
 * The engine reads a sandbox host's stdout through `onread` (host-stdout.ts): no readable stream
 * push (nor its 'data' event and `maybeReadMore` tick) for any read of a host's frames, and every
 * message still whole and in order — frames cut at every byte boundary across reads (a kept part
 * copied off the shared read buffer before the next read fills it), a message larger than one read
 * and one of many frames, a host killed mid-frame (the run fails as `worker-exit`, nothing hangs),
 * a host's EOF after its last frame (delivered, then closed), a run of 100 calls in flight, and a
 * pooled host reused across runs. Real processes: real hosts, and `test/fake-host.ts` where the
 * bytes must be cut by hand.
 */
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { encodeMessage, FrameReader } from './frame.ts';
import { HostProcess } from './host-process.ts';
import { createEngine } from './index.ts';
import type { Engine, EngineOptions } from './types.ts';
import type { FromHost } from './wire.ts';

const FAKE_HOST = fileURLToPath(new URL('../test/fake-host.ts', import.meta.url));
const fake =
  (mode: string): EngineOptions['wrapCommand'] =>
  (command) => ({
    command,
    args: ['--disable-warning=ExperimentalWarning', FAKE_HOST, mode],
  });

const engines: Engine[] = [];
const hosts: HostProcess[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  for (const h of hosts) await h.stop();
});

/** Chunks pushed through any readable stream of this process (not the end's `null`). */
let pushes = 0;
beforeEach(() => {
  pushes = 0;
  const push = Readable.prototype.push;
  vi.spyOn(Readable.prototype, 'push').mockImplementation(function (this: Readable, chunk, encoding) {
    if (chunk !== null) pushes++;
    return push.call(this, chunk, encoding);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function startFake(mode: string, onMessage: (m: FromHost) => void = () => {}) {
  const host = await HostProcess.start({
    partition: 'stdout',
    startupTimeoutMs: 20_000,
    wrapCommand: fake(mode),
  });
  hosts.push(host);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    host.attach({
      onMessage,
      onProtocolError: (r) => onMessage({ t: 'logs', lines: [['error', r]] }),
      onExit: resolve,
    }),
  );
  return { host, exited };
}

describe("a host's frames read through onread", () => {
  it('frames cut at every byte boundary arrive whole and in order, with no stream push', async () => {
    const seen: string[] = [];
    const { host } = await startFake('pieces', (m) => {
      if (m.t === 'logs') seen.push(m.lines[0]![1]);
    });
    // The fake host writes its next piece when we send anything: we answer each read of ours.
    const push = FrameReader.prototype.push;
    let reads = 0;
    vi.spyOn(FrameReader.prototype, 'push').mockImplementation(function (this: FrameReader, chunk) {
      push.call(this, chunk);
      reads++;
      host.send({ t: 'end', kind: 'stop' });
    });
    pushes = 0;
    host.send({ t: 'end', kind: 'stop' });
    const logs = (text: string) => encodeMessage({ t: 'logs', lines: [['log', text]] });
    const bytes = Buffer.concat([...logs('first é'), ...logs('second')]).length;
    // Every cut k of the two messages' bytes (1 … bytes − 1): two reads, both messages whole.
    await vi.waitFor(() => expect(seen.length).toBe(2 * (bytes - 1)), { timeout: 20_000 });
    expect(reads).toBe(2 * (bytes - 1));
    for (let i = 0; i < seen.length; i += 2) expect(seen.slice(i, i + 2)).toEqual(['first é', 'second']);
    expect(pushes).toBe(0);
  });

  it('a host killed mid-frame fails its run as worker-exit, and the next run gets a new host', async () => {
    const engine = createEngine({ prewarm: false, wrapCommand: fake('cut') });
    engines.push(engine);
    const out = await engine.execute('return 1');
    expect(out.status).toBe('failed');
    expect(out.failure?.kind).toBe('worker-exit');
    expect((await engine.execute('return 1')).failure?.kind).toBe('worker-exit');
  });

  it("a host's EOF after its last frame: the frame delivered, then the process closed", async () => {
    const seen: string[] = [];
    const { host, exited } = await startFake('eof', (m) => {
      if (m.t === 'logs') seen.push(m.lines[0]![1]);
    });
    pushes = 0;
    host.send({ t: 'end', kind: 'stop' });
    expect(await exited).toEqual({ code: 0, signal: null, stderr: '' });
    await host.whenClosed();
    expect(seen).toEqual(['last words']);
    expect(pushes).toBe(0);
  });
});

describe("a real host's frames read through onread", () => {
  const engine = createEngine({ prewarm: false });
  engines.push(engine);
  const onCall = async (call: { argsJson: string }) => ({
    type: 'result' as const,
    valueJson: call.argsJson,
  });

  it('large results (one message of many reads), 100 calls in flight, one pooled host for every run: no stream push', async () => {
    pushes = 0;
    const big = await engine.execute('return "x".repeat(6 * 1024 * 1024) + "yz"', {
      limits: { outputBytes: 64 * 1024 * 1024 },
    });
    expect(big.status).toBe('completed');
    expect(big.valueJson?.length).toBe(6 * 1024 * 1024 + 4);
    expect(big.valueJson?.endsWith('yz"')).toBe(true);
    const par = await engine.execute(
      'const r = await Promise.all(Array.from({ length: 100 }, (_, i) => t({ i }))); return r.map((x) => x.i).join(",")',
      { bindings: ['t'], onCall },
    );
    expect(par.valueJson).toBe(JSON.stringify(Array.from({ length: 100 }, (_, i) => i).join(',')));
    const seq = await engine.execute(
      'let n = 0; for (let i = 0; i < 20; i++) n += (await t({ i })).i; return n',
      {
        bindings: ['t'],
        onCall,
      },
    );
    expect(seq.valueJson).toBe('190');
    expect(new Set([big.hostPid, par.hostPid, seq.hostPid]).size).toBe(1);
    expect(pushes).toBe(0);
  });
});
