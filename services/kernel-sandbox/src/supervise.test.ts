/**
 * islet-jail --supervise as a NON-root launcher (setpriv to a uid of its own, so the per-run uid
 * sweep that root gets is not there to help): setsid, double fork, nohup and python's
 * fork+setsid must not outlive the deadline or the program, and the output pipes they hold must
 * not delay the launcher's exit. The control case shows the same escapes survive the old wall
 * (killing the process group) and hold the pipe open.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { killAllOf, processesOf } from '@islet/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { requireRoot } from '../test/test-helpers.ts';
import { jailArgs } from './jail.ts';
import { jailPath } from './paths.ts';

requireRoot('running islet-jail as another non-root uid (setpriv)');

const ESCAPES = `
setsid sleep 601.1 & echo "pid $!"
( (sleep 601.2 & echo "pid $!") & )
nohup sleep 601.3 2>/dev/null & echo "pid $!"
python3 -c 'import os,time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("pid", os.getpid(), flush=True)
        time.sleep(601.4)
    os._exit(0)
time.sleep(0.2)'
for i in 1 2 3 4 5 6 7 8; do (setsid sleep 601.5 &) ; done
sleep 0.3; echo started
`;

const uids: number[] = [];
const started: ChildProcess[] = [];
afterEach(async () => {
  for (const c of started.splice(0))
    try {
      if (c.pid) process.kill(-c.pid, 'SIGKILL');
    } catch {}
  for (const uid of uids.splice(0)) await killAllOf(uid);
});

/** A uid nothing else on the machine uses (outside the skills' per-run range). */
function freshUid(): number {
  const uid = 170_000 + Math.floor(Math.random() * 20_000);
  uids.push(uid);
  return uid;
}

interface Launched {
  child: ChildProcess;
  stdout: () => string;
  /** When every holder of stdout/stderr closed them (ms after start), and the exit code. */
  closed: Promise<{ ms: number; code: number | null }>;
  exited: Promise<{ ms: number; code: number | null }>;
}

function launch(uid: number, script: string, supervise: { timeoutMs?: number } | false): Launched {
  const args = [
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    jailPath(),
    ...jailArgs('read-only', {
      chdir: '/',
      ...(supervise ? { supervise: true, ...supervise } : {}),
    }),
    'bash',
    '-c',
    script,
  ];
  const t0 = performance.now();
  const child = spawn('setpriv', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  started.push(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.resume();
  return {
    child,
    stdout: () => out,
    closed: new Promise((r) => child.on('close', (code) => r({ ms: performance.now() - t0, code }))),
    exited: new Promise((r) => child.on('exit', (code) => r({ ms: performance.now() - t0, code }))),
  };
}

async function startedIn(run: Launched) {
  for (let i = 0; i < 200 && !run.stdout().includes('started'); i++)
    await new Promise((r) => setTimeout(r, 50));
  expect(run.stdout()).toContain('started');
}

/** Long enough for python and a dozen forks to start on a loaded machine. */
const DEADLINE_MS = 4000;

const pidsIn = (text: string) => [...text.matchAll(/^pid (\d+)$/gm)].map((m) => Number(m[1]));

describe('islet-jail --supervise, launcher not root', () => {
  it('control: without it, the escapes outlive a process-group kill and hold the pipe open', async () => {
    const uid = freshUid();
    const run = launch(uid, `${ESCAPES}\nsleep 60`, false);
    await startedIn(run);
    process.kill(-(run.child.pid ?? 0), 'SIGKILL'); // the old wall
    await run.exited;
    const closedSoon = await Promise.race([
      run.closed.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 1000)),
    ]);
    expect(closedSoon).toBe(false); // orphans still hold stdout
    expect(processesOf(uid).length).toBeGreaterThanOrEqual(4);
  });

  it('at the deadline: exit 124 on time, pipes closed, no process of the uid left', async () => {
    const uid = freshUid();
    const run = launch(uid, `${ESCAPES}\nsleep 60`, { timeoutMs: DEADLINE_MS });
    const closed = await run.closed;
    expect(closed.code).toBe(124);
    expect(closed.ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    // No upper bound in ms: the escapes sleep 601 s, ten times the test's own limit, so pipes that
    // closed at all were closed by the kill (124), not by the escapes ending.
    expect(run.stdout()).toContain('started');
    expect(pidsIn(run.stdout())).toHaveLength(4); // every escape started
    expect(processesOf(uid)).toEqual([]);
  });

  it('when the program exits first: the rest of the tree dies with it', async () => {
    const uid = freshUid();
    const run = launch(uid, `${ESCAPES}\nexit 7`, { timeoutMs: 30_000 });
    const closed = await run.closed;
    expect(closed.code).toBe(7); // the program's own status, not the 30 s deadline's 124
    expect(processesOf(uid)).toEqual([]);
  });

  it('on SIGTERM (the runner stopping it): the whole tree dies, exit 143', async () => {
    const uid = freshUid();
    const run = launch(uid, `${ESCAPES}\nsleep 60`, {});
    await startedIn(run);
    // setpriv execs islet-jail in place: the child pid is the supervisor.
    run.child.kill('SIGTERM');
    const closed = await run.closed;
    expect(closed.code).toBe(143);
    expect(processesOf(uid)).toEqual([]);
  });

  it('the jailed program cannot kill its supervisor (same uid): the deadline still holds', async () => {
    const uid = freshUid();
    const run = launch(uid, `${ESCAPES}\nkill -9 $PPID 2>/dev/null || echo "kill refused"; sleep 60`, {
      timeoutMs: DEADLINE_MS,
    });
    const closed = await run.closed;
    expect(run.stdout()).toContain('kill refused');
    expect(closed.code).toBe(124);
    expect(processesOf(uid)).toEqual([]);
  });
});
