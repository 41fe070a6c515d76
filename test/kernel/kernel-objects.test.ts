/**
 * Hostile skills against kernel objects that live outside the program's files: SysV IPC and POSIX
 * message queues that outlive a skill and reach another tenant's skill, a host's pathname unix
 * socket outside every Landlock grant, and a binary executed from an anonymous memfd. Each goes
 * through the real skill path (runSkill → islet-jail → interpreter) and must be refused.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readlinkSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunSkillOptions, runSkill } from '../../services/kernel-sandbox/src/index.ts';
import { makeLayout, requireRoot } from '../../services/kernel-sandbox/test/test-helpers.ts';

const layout = makeLayout('islet-kobj-');
// One key per test run: what a first skill leaves under it is what a second one looks for.
const KEY = 0x15e70000 + (process.pid & 0xffff);
const MQ_NAME = `/islet-attack-${process.pid}`;
const socketPath = join(layout.outside, 'host.sock');
let server: Server;
let connections = 0;

beforeAll(async () => {
  server = createServer((s) => {
    connections++;
    s.end('host secret\n');
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  chmodSync(socketPath, 0o777); // every uid may connect: only the sandbox can stop it
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  // Whatever an attack managed to create (on a kernel or build where it got through) goes with the test.
  const hex = `0x${KEY.toString(16)}`;
  for (const flag of ['-M', '-Q', '-S']) spawnSync('ipcrm', [flag, hex], { stdio: 'ignore' });
  spawnSync('python3', ['-c', `import ctypes; ctypes.CDLL(None).mq_unlink(b"${MQ_NAME}")`], {
    stdio: 'ignore',
  });
  rmSync(socketPath, { force: true });
  layout.cleanup();
});

const py = (code: string, extra: Partial<RunSkillOptions> = {}) =>
  runSkill({
    mode: 'workspace-write',
    workspaceDir: layout.ws,
    workspaceRoot: layout.root,
    timeout: 10_000,
    language: 'python',
    code,
    ...extra,
  });

const CTYPES = [
  'import ctypes, os',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'libc.shmat.restype = ctypes.c_void_p',
  'def err(): return "denied %d" % ctypes.get_errno()',
].join('\n');

/** The live SysV objects of the host's IPC namespace, as `ipcs` lists them. */
function ipcsHasKey(): boolean {
  const out = spawnSync('ipcs', ['-a'], { encoding: 'utf8' }).stdout;
  return out.toLowerCase().includes(`0x${KEY.toString(16).padStart(8, '0')}`);
}

describe('SysV IPC and POSIX message queues', () => {
  it('a skill cannot leave shared memory, a message queue or semaphores behind for another tenant', async () => {
    const planted = await py(
      [
        CTYPES,
        `KEY = ${KEY}`,
        'shm = libc.shmget(KEY, 1 << 20, 0o1000 | 0o666)',
        'if shm < 0: print("shm", err())',
        'else:',
        '  addr = libc.shmat(shm, None, 0)',
        '  ctypes.memmove(addr, b"tenant-a secret", 15)',
        '  print("shm planted")',
        'q = libc.msgget(KEY, 0o1000 | 0o666)',
        'if q < 0: print("msg", err())',
        'else:',
        '  m = ctypes.create_string_buffer(b"\\x01\\0\\0\\0\\0\\0\\0\\0tenant-a message")',
        '  print("msg planted", libc.msgsnd(q, m, 16, 0))',
        'sem = libc.semget(KEY, 4, 0o1000 | 0o666)',
        'print("sem", "planted" if sem >= 0 else err())',
      ].join('\n'),
    );
    expect(planted.output).toBe('shm denied 1\nmsg denied 1\nsem denied 1\n');
    expect(ipcsHasKey()).toBe(false);

    // Another tenant's skill, another session: it looks for what the first one left.
    const other = await py(
      [
        CTYPES,
        `KEY = ${KEY}`,
        'shm = libc.shmget(KEY, 0, 0)',
        'if shm < 0: print("shm", err())',
        'else: print("shm read", ctypes.string_at(libc.shmat(shm, None, 0), 15))',
        'q = libc.msgget(KEY, 0)',
        'if q < 0: print("msg", err())',
        'else:',
        '  m = ctypes.create_string_buffer(64)',
        '  n = libc.msgrcv(q, m, 56, 0, 0o4000)',
        '  print("msg read", m.raw[8:8 + max(n, 0)])',
      ].join('\n'),
      { workspaceDir: layout.other },
    );
    expect(other.output).toBe('shm denied 1\nmsg denied 1\n');
  });

  it('a skill cannot create a POSIX message queue nor POSIX shared memory (named, both would outlive it)', async () => {
    const r = await py(
      [
        CTYPES,
        `q = libc.mq_open(b"${MQ_NAME}", os.O_CREAT | os.O_RDWR, 0o666, None)`,
        'print("mq", "created" if q >= 0 else err())',
        // shm_open is a file under /dev/shm: Landlock grants it to no mode but danger-full-access.
        'try: open("/dev/shm/islet-attack", "w").write("x"); print("shm_open created")',
        'except OSError as e: print("shm_open denied", e.errno)',
      ].join('\n'),
    );
    expect(r.output).toBe('mq denied 1\nshm_open denied 13\n');
  });

  it('as root, each skill also gets an IPC namespace of its own', async () => {
    requireRoot('the IPC namespace test (creating one needs CAP_SYS_ADMIN)');
    const r = await py('import os\nprint(os.readlink("/proc/self/ns/ipc"))');
    const mine = readlinkSync('/proc/self/ns/ipc');
    expect(r.output).toMatch(/^ipc:\[\d+\]\n$/);
    expect(r.output.trim()).not.toBe(mine);
  });
});

describe("the host's pathname unix sockets", () => {
  it('a skill cannot connect to a unix socket outside its grants, in any form', async () => {
    const r = await py(
      [
        'import socket',
        'def t(name, fn):',
        '  try: print(name, fn())',
        '  except OSError as e: print(name, "denied", e.errno)',
        'def stream():',
        '  s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)',
        `  s.connect(${JSON.stringify(socketPath)})`,
        '  return s.recv(64).decode().strip()',
        'def dgram():',
        '  a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)',
        `  return a.sendto(b"x", ${JSON.stringify(socketPath)})`,
        'def seqpacket():',
        '  s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)',
        `  s.connect(${JSON.stringify(socketPath)})`,
        '  return "connected"',
        't("stream", stream)',
        't("dgram", dgram)',
        't("seqpacket", seqpacket)',
        // A connected stream pair (what subprocess and child_process use) still works.
        'a, b = socket.socketpair()\na.send(b"pair ok")\nprint(b.recv(7).decode())',
      ].join('\n'),
    );
    expect(r.output).toBe('stream denied 1\ndgram denied 1\nseqpacket denied 1\npair ok\n');
    expect(connections).toBe(0);
  });

  it('javascript: net.connect to the path is refused, child_process still works', async () => {
    const r = await runSkill({
      mode: 'workspace-write',
      workspaceDir: layout.ws,
      workspaceRoot: layout.root,
      timeout: 10_000,
      language: 'javascript',
      code: [
        "const net = require('node:net');",
        "const { execFileSync } = require('node:child_process');",
        "console.log(execFileSync('/bin/echo', ['child ok']).toString().trim());",
        `const s = net.connect(${JSON.stringify(socketPath)});`,
        "s.on('data', (d) => console.log('read', String(d).trim()));",
        "s.on('error', (e) => console.log('net', e.code));",
      ].join('\n'),
    });
    expect(r.output).toBe('child ok\nnet EPERM\n');
    expect(connections).toBe(0);
  });
});

describe('executing a binary that is not a file under a grant', () => {
  it('a skill cannot create a memfd, so it cannot execute one', async () => {
    const r = await py(
      [
        'import os, subprocess',
        'try:',
        '  fd = os.memfd_create("payload", 0)',
        '  with open("/usr/bin/id", "rb") as src: os.write(fd, src.read())',
        '  out = subprocess.run([f"/proc/self/fd/{fd}", "-u"], pass_fds=(fd,), capture_output=True)',
        '  print("executed", out.returncode, out.stdout.decode().strip())',
        'except OSError as e: print("memfd denied", e.errno)',
      ].join('\n'),
    );
    expect(r.output).toBe('memfd denied 1\n');
  });

  it('neither a copy in the workspace by path, by fd (execveat AT_EMPTY_PATH), via /proc/self/fd, nor an O_TMPFILE', async () => {
    const r = await py(
      [
        'import os, shutil, subprocess',
        'def t(name, fn):',
        '  try: fn(); print(name, "executed")',
        '  except OSError as e: print(name, "denied", e.errno)',
        'shutil.copy("/usr/bin/true", "copy")',
        'os.chmod("copy", 0o755)',
        'def run(argv, **kw):',
        '  subprocess.run(argv, check=False, **kw)',
        't("path", lambda: run(["./copy"]))',
        'fd = os.open("copy", os.O_RDONLY)',
        'def by_fd():',
        '  pid = os.fork()',
        '  if pid == 0:',
        '    try: os.execve(fd, ["copy"], {})',
        '    except OSError as e: os._exit(e.errno)',
        '  code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])',
        '  if code: raise OSError(code, os.strerror(code))',
        't("fd", by_fd)',
        't("proc-fd", lambda: run([f"/proc/self/fd/{fd}"], pass_fds=(fd,)))',
        'tmp = os.open(".", os.O_TMPFILE | os.O_RDWR, 0o755)',
        'os.write(tmp, open("/usr/bin/true", "rb").read())',
        't("tmpfile", lambda: run([f"/proc/self/fd/{tmp}"], pass_fds=(tmp,)))',
      ].join('\n'),
    );
    expect(r.output).toBe('path denied 13\nfd denied 13\nproc-fd denied 13\ntmpfile denied 13\n');
  });
});
