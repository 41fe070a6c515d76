import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PARTIAL_ENFORCEMENT_TEXT } from '@islet/engine';
import { SANDBOX_MODES } from '@islet/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DENIED_PROBE_OPS,
  fsRulesPath,
  makeLayout,
  probePath,
  probeUnder,
  profilePath,
  runJailed,
} from '../test/test-helpers.ts';
import { fileSandboxDeniedText } from './facts.ts';
import { JAIL_UNAVAILABLE_EXIT_CODE, jailArgs, probeEnforcement, wrapCommandForMode } from './jail.ts';
import { jailPath } from './paths.ts';

const layout = makeLayout();
// Expectations come from the same rules file the launcher is compiled from.
const fsRules = JSON.parse(readFileSync(fsRulesPath(), 'utf8')) as {
  modes: Record<string, { workspace: string; scratch: string; outsideWorkspace: string }>;
};
afterAll(() => layout.cleanup());

describe.each(SANDBOX_MODES)('islet-jail directly, mode %s', (mode) => {
  const opts = {
    workspaceDir: layout.ws,
    workspaceRoot: layout.root,
    scratchDir: layout.scratch,
    readPaths: [],
  };

  it('denies sockets, namespaces, ptrace, io_uring, mount, bpf, keyctl, SysV IPC, memfd, …; allows a stream socketpair', () => {
    const { results, report } = probeUnder(mode, opts, [...DENIED_PROBE_OPS, 'socketpair-stream']);
    for (const op of DENIED_PROBE_OPS) expect({ op, result: results[op] }).toEqual({ op, result: 'EPERM' });
    expect(results['socketpair-stream']).toBe('ok');
    expect(report?.enforcement).toBe('full');
    expect(report?.missing).toEqual([]);
    expect(report?.layers).toEqual({ no_new_privs: true, seccomp: true, landlock: true, rlimits: true });
    expect(report?.mode).toBe(mode);
  });

  it('reads the interpreter and system files, never another tenant or /proc/1/environ, cannot signal outside', () => {
    const { results } = probeUnder(mode, opts, [
      'read:/usr/bin/python3',
      'read:/etc/hostname',
      `read:${join(layout.other, 'secret.txt')}`,
      'proc1-environ',
      'kill-parent',
      'write:/dev/null',
      'exec:/usr/bin/true',
    ]);
    expect(results['read:/usr/bin/python3']).toBe('ok');
    expect(results['read:/etc/hostname']).toBe('ok');
    expect(results[`read:${join(layout.other, 'secret.txt')}`]).toBe('EACCES');
    expect(results['proc1-environ']).toBe('EACCES');
    expect(results['kill-parent']).toBe('EPERM');
    expect(results['write:/dev/null']).toBe('ok');
    expect(results['exec:/usr/bin/true']).toBe('ok');
  });

  it('writes the workspace only when the mode allows, scratch always, system paths never', () => {
    const wsFile = join(layout.ws, `w-${mode}.txt`);
    const outFile = join(layout.outside, `o-${mode}.txt`);
    const otherFile = join(layout.other, `x-${mode}.txt`);
    const { results } = probeUnder(mode, opts, [
      `read:${join(layout.ws, 'mine.txt')}`,
      `write:${wsFile}`,
      `write:${join(layout.scratch, `s-${mode}.txt`)}`,
      `write:${outFile}`,
      `write:${otherFile}`,
      'write:/etc/islet-probe.txt',
      'write:/usr/islet-probe.txt',
    ]);
    expect(results[`read:${join(layout.ws, 'mine.txt')}`]).toBe('ok');
    const rules = fsRules.modes[mode]!;
    expect(results[`write:${wsFile}`]).toBe(rules.workspace === 'read-write' ? 'ok' : 'EACCES');
    expect(results[`write:${join(layout.scratch, `s-${mode}.txt`)}`]).toBe(
      rules.scratch === 'read-write' ? 'ok' : 'EACCES',
    );
    // danger-full-access reaches beyond the workspace, but never into another tenant's.
    expect(results[`write:${outFile}`]).toBe(rules.outsideWorkspace === 'read-write' ? 'ok' : 'EACCES');
    expect(rules.workspace).toBe(mode === 'read-only' ? 'read' : 'read-write'); // the contract's modes
    expect(results[`write:${otherFile}`]).toBe('EACCES');
    expect(results['write:/etc/islet-probe.txt']).toBe('EACCES');
    expect(results['write:/usr/islet-probe.txt']).toBe('EACCES');
  });

  it('never executes what it could write (W^X) outside danger-full-access', () => {
    const bin = join(layout.scratch, `true-${mode}`);
    copyFileSync('/usr/bin/true', bin);
    const { results } = probeUnder(mode, opts, [`exec:${bin}`]);
    expect(results[`exec:${bin}`]).toBe(mode === 'danger-full-access' ? 'ok' : 'EACCES');
  });

  it('runs as nobody, in an IPC namespace of its own, when started as root', () => {
    const { results, report } = probeUnder(mode, opts, ['uid']);
    if (process.getuid?.() === 0) {
      expect(results.uid).toBe('65534');
      expect(report?.uid).toBe(65534);
      expect(report?.ipcNamespace).toBe(true);
    } else {
      expect(results.uid).toBe(String(process.getuid?.()));
      expect(report?.ipcNamespace).toBe(false);
    }
  });
});

describe('enforcement reporting', () => {
  it('reports partial and names the missing layer when one cannot be applied', () => {
    const res = runJailed('read-only', { testSkipLayer: 'landlock', readPaths: [] }, ['/usr/bin/true']);
    expect(res.status).toBe(0);
    expect(res.report?.enforcement).toBe('partial');
    expect(res.report?.missing).toEqual(['landlock']);
    expect(res.report?.layers.seccomp).toBe(true);
  });

  it('with --require full refuses to start (exit 78) and says sandbox-unavailable', () => {
    const res = runJailed('workspace-write', { testSkipLayer: 'seccomp', require: 'full', readPaths: [] }, [
      probePath(),
      'socket-inet',
    ]);
    expect(res.status).toBe(JAIL_UNAVAILABLE_EXIT_CODE);
    expect(res.stdout).toBe(''); // the command never ran
    expect(res.stderr).toContain('sandbox-unavailable');
    expect(res.stderr).toContain('seccomp');
  });

  it('probeEnforcement reports full on this host for every mode', async () => {
    for (const mode of SANDBOX_MODES) {
      const report = await probeEnforcement(mode);
      expect(report.enforcement).toBe('full');
      expect(report.landlockAbi).toBeGreaterThanOrEqual(1);
    }
  });

  it('refuses bad usage with exit 64', () => {
    expect(runJailed('read-only', {}, []).status).toBe(64);
  });
});

describe('wrapCommandForMode', () => {
  it('prefixes the command line with islet-jail and the mode', () => {
    const wrap = wrapCommandForMode('read-only', { require: 'full', readPaths: ['/opt/app'] });
    const wrapped = wrap('/usr/bin/node', ['--no-node-snapshot', 'host.ts']);
    expect(wrapped.command).toBe(jailPath());
    expect(wrapped.args).toEqual([
      '--mode',
      'read-only',
      '--read',
      '/opt/app',
      '--require',
      'full',
      '--',
      '/usr/bin/node',
      '--no-node-snapshot',
      'host.ts',
    ]);
  });

  it('starts Node under the profile: no network, no writes, the program still runs', () => {
    const res = runJailed('read-only', { require: 'full' }, [
      process.execPath,
      '-e',
      `const net=require('node:net');const fs=require('node:fs');
       try{fs.writeFileSync(${JSON.stringify(join(layout.outside, 'n.txt'))},'x');console.log('wrote')}catch(e){console.log('write',e.code)}
       net.connect(9,'127.0.0.1').on('error',e=>console.log('net',e.code));`,
    ]);
    expect(res.report?.enforcement).toBe('full');
    expect(res.stdout).toContain('write EACCES');
    expect(res.stdout).toContain('net EPERM');
  });

  it('jailArgs passes rlimits through', () => {
    expect(jailArgs('read-only', { rlimitNproc: 5, rlimitFsizeBytes: 10, readPaths: [] })).toEqual([
      '--mode',
      'read-only',
      '--rlimit-nproc',
      '5',
      '--rlimit-fsize',
      '10',
      '--',
    ]);
  });
});

describe('profiles and facts', () => {
  it('ships one OCI/Kubernetes seccomp JSON per mode denying the dangerous syscalls', () => {
    for (const mode of SANDBOX_MODES) {
      const p = JSON.parse(readFileSync(profilePath(mode), 'utf8'));
      expect(p.defaultAction).toBe('SCMP_ACT_ALLOW');
      expect(p.architectures).toContain('SCMP_ARCH_X86_64');
      const denied = new Set(
        (p.syscalls as { names: string[]; action: string; args?: unknown[] }[])
          .filter((r) => r.action === 'SCMP_ACT_ERRNO' && !r.args)
          .flatMap((r) => r.names),
      );
      for (const name of [
        'ptrace',
        'mount',
        'unshare',
        'setns',
        'bpf',
        'io_uring_setup',
        'keyctl',
        'userfaultfd',
        // SysV IPC, POSIX message queues, anonymous executable files, every socket.
        ...['shmget', 'shmat', 'shmctl', 'shmdt', 'msgget', 'msgsnd', 'msgrcv', 'msgctl'],
        ...['semget', 'semop', 'semtimedop', 'semctl', 'ipc', 'mq_open', 'mq_unlink'],
        ...['mq_timedsend', 'mq_timedreceive', 'mq_notify', 'mq_getsetattr', 'memfd_create', 'socket'],
      ]) {
        expect({ name, denied: denied.has(name) }).toEqual({ name, denied: true });
      }
      // socketpair: every type but SOCK_STREAM (a datagram pair could send to a host path).
      const pairTypes = (p.syscalls as { names: string[]; args?: { valueTwo: number }[] }[])
        .filter((r) => r.names.includes('socketpair'))
        .map((r) => r.args?.[0]?.valueTwo);
      expect(pairTypes).toEqual([2, 3, 4, 5, 6, 10]);
    }
  });

  it('renders the contract texts verbatim', () => {
    expect(fileSandboxDeniedText('read-only', 'full')).toBe(
      'File sandbox: read-only; enforcement: full; operation denied',
    );
    expect(PARTIAL_ENFORCEMENT_TEXT).toBe('File sandbox enforcement is partial on this host.');
  });
});
