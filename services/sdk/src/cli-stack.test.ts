/**
 * The `islet` CLI against a real local stack: configuration from ISLET_URL / ISLET_API_KEY (and a
 * clear refusal without them), a failed connection naming the URL and the reason, program input
 * from --code, --file and stdin, --json, `watch`, `decisions`, and terminal control sequences in a
 * program's output escaped on a TTY (a real pseudo-terminal via script(1)) unless --raw.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type Cluster, startCluster } from '@islet/devstack';
import { freePort } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.ts';
import type { CliIo } from './cli-output.ts';
import { createIsletClient, type IsletClient } from './client.ts';

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));
// A program printing an OSC 52 clipboard write and a screen clear, then a carriage return.
const HOSTILE = 'console.log("copy\\u001b]52;c;aGk=\\u0007 clear\\u001b[2J\\rx\\u009b1m"); return 1';

let cluster: Cluster;
let api: IsletClient;
let env: Record<string, string>;
let dir: string;
beforeAll(async () => {
  cluster = await startCluster({ modes: ['read-only', 'workspace-write'] });
  api = createIsletClient({ url: cluster.url, key: cluster.devKey });
  env = { ISLET_URL: cluster.url, ISLET_API_KEY: cluster.devKey };
  dir = mkdtempSync(join(tmpdir(), 'islet-cli-'));
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** runCli with captured streams; `tty` makes stdout and stderr claim to be terminals. */
async function cli(
  args: string[],
  opts: { tty?: boolean; stdin?: string; env?: Record<string, string> } = {},
) {
  let stdout = '';
  let stderr = '';
  const stdin = Object.assign(Readable.from(opts.stdin === undefined ? [] : [Buffer.from(opts.stdin)]), {
    isTTY: opts.stdin === undefined,
  });
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s), isTTY: opts.tty === true },
    stderr: { write: (s: string) => (stderr += s), isTTY: opts.tty === true },
    stdin,
  };
  const code = await runCli(args, opts.env ?? env, io);
  return { code, stdout, stderr };
}

/** The CLI as a process: `{status, stdout, stderr}`. */
function spawnCli(
  args: string[],
  childEnv: Record<string, string>,
  stdin?: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...childEnv },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

async function pendingDecision(runId: string) {
  for (let i = 0; i < 150; i++) {
    const found = (await api.listDecisions()).find((d) => d.code.run === runId);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no pending decision for ${runId}`);
}

describe('configuration and connection errors', () => {
  it('without ISLET_URL it says what to set (exit 2), with no guessed port', async () => {
    const res = await spawnCli(['run', '--code', 'return 1'], {});
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('islet: ISLET_URL is not set');
    expect(res.stderr).toContain('export ISLET_URL=… ISLET_API_KEY=…');
    const noKey = await spawnCli(['decisions'], { ISLET_URL: cluster.url });
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toContain('islet: ISLET_API_KEY is not set');
  });

  it('a gateway that is not there is named with the reason, not just "fetch failed"', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const res = await spawnCli(['run', '--code', 'return 1'], { ISLET_URL: url, ISLET_API_KEY: 'k' });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`islet: cannot reach ${url}/v1/runs: connect ECONNREFUSED`);
  });

  it('a refusal prints the problem', async () => {
    const res = await spawnCli(['run', '--code', 'return 1', '--timeout-ms=-1'], env);
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^islet: 400 /);
  });
});

describe('islet run', () => {
  it('--code prints the result text; --json the whole record', async () => {
    const text = await cli(['run', '--code', 'console.log("hi"); return 6 * 7']);
    expect(text).toEqual({ code: 0, stdout: 'hi\n42\n', stderr: '' });
    const json = await cli(['run', '--json', '--code', 'return [1, 2]']);
    expect(json.code).toBe(0);
    const record = JSON.parse(json.stdout) as { status: string; result: { value: unknown } };
    expect(record.status).toBe('Completed');
    expect(record.result.value).toEqual([1, 2]);
  });

  it('--file reads a file; without --code or --file a piped stdin is the program', async () => {
    const file = join(dir, 'prog.js');
    writeFileSync(file, 'const a = 20;\nreturn a + 1;\n');
    expect(await cli(['run', '--file', file])).toMatchObject({ code: 0, stdout: '21\n' });
    expect(await cli(['run', '--file', '-'], { stdin: 'return "dash"' })).toMatchObject({ stdout: 'dash\n' });
    const piped = await spawnCli(['run'], env, 'return "from stdin"');
    expect(piped).toMatchObject({ status: 0, stdout: 'from stdin\n' });
    await expect(cli(['run', '--code', 'return 1', '--file', file])).rejects.toThrow('--code or --file');
  });

  it('a failed run exits 1 with its text', async () => {
    const res = await cli(['run', '--code', 'throw new Error("boom")']);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain('boom');
  });

  it("escapes a program's control sequences on a terminal, not with --raw, not when piped", async () => {
    const tty = await cli(['run', '--code', HOSTILE], { tty: true });
    expect(tty.code).toBe(0);
    expect(tty.stdout).toBe('copy\\x1b]52;c;aGk=\\x07 clear\\x1b[2J\\x0dx\\x9b1m\n1\n');
    expect(tty.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    const raw = await cli(['run', '--raw', '--code', HOSTILE], { tty: true });
    expect(raw.stdout).toBe('copy\u001b]52;c;aGk=\u0007 clear\u001b[2J\rx\u009b1m\n1\n');
    const piped = await cli(['run', '--code', HOSTILE]);
    expect(piped.stdout).toBe(raw.stdout);
  });

  it('on a real pseudo-terminal the escape sequences arrive as text', async () => {
    // script(1) gives the CLI a pty as stdout; what the terminal would receive is its output.
    const command = [process.execPath, CLI, 'run', '--code', HOSTILE]
      .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
      .join(' ');
    const res = await new Promise<{ status: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout }));
    });
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('copy\\x1b]52;c;aGk=\\x07 clear\\x1b[2J\\x0dx\\x9b1m');
    expect(res.stdout).not.toContain('\u001b]52');
    expect(res.stdout).not.toContain('\u001b[2J');
  });
});

describe('islet watch and islet decisions', () => {
  it('watch prints each event to the end and exits with the run', async () => {
    const run = await api.submitRun({ code: 'console.log("w"); return 5', description: 'Watch a run' });
    const res = await cli(['watch', run.id]);
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toContain('end {"status":"Completed"}');
    expect(lines.at(-1)).toBe('5');
    const json = await cli(['watch', run.id, '--json']);
    const events = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; event: string; data: unknown });
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'Completed' } });
    expect(events.every((e) => /^\d+-\d+$/.test(e.id))).toBe(true);
  });

  it('run waits through a decision, says how to answer it, and decisions allow lets it finish', async () => {
    const running = cli([
      'run',
      '--wait',
      '1',
      '--code',
      'return "wider"',
      '--description',
      'Ask for workspace write access',
      '--sandbox-permissions',
      'workspace-write',
      '--justification',
      'The CLI test needs a decision',
    ]);
    const decisions = async () =>
      (await api.listDecisions()).filter((d) => d.justification?.includes('CLI test needs'));
    let found = await decisions();
    for (let i = 0; i < 150 && found.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
      found = await decisions();
    }
    const decision = found[0]!;
    const listed = await cli(['decisions']);
    expect(listed.stdout).toContain(
      `${decision.id}  sandbox.escalate workspace-write  "The CLI test needs a decision"`,
    );
    const listedJson = JSON.parse((await cli(['decisions', '--json'])).stdout) as Array<{ id: string }>;
    expect(listedJson.map((d) => d.id)).toContain(decision.id);
    // `watch` follows the same run from another terminal.
    const watching = cli(['watch', decision.code.run]);
    expect((await cli(['decisions', 'allow', decision.id])).code).toBe(0);
    const ran = await running;
    expect(ran).toMatchObject({ code: 0, stdout: 'wider\n' });
    expect(ran.stderr).toContain(`islet decisions allow ${decision.id}`);
    const watched = await watching;
    expect(watched.code).toBe(0);
    expect(watched.stdout).toContain('decision.answered');
    expect(watched.stdout.trim().split('\n').at(-1)).toBe('wider');
    await expect(cli(['decisions', 'deny', decision.id])).rejects.toThrow(/^409 /);
  });

  it('decisions deny ends the run without running it', async () => {
    const submitted = await api.submitRun({
      code: 'return 1',
      description: 'Ask for workspace write access',
      sandbox_permissions: 'workspace-write',
      justification: 'The CLI test denies this',
    });
    const decision = await pendingDecision(submitted.id);
    expect((await cli(['decisions', 'deny', decision.id])).code).toBe(0);
    const run = await api.waitForRun(submitted.id);
    expect(run.status).toBe('Failed');
  });
});
