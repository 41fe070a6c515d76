/**
 * An OCI bundle for runc built the way a runner pod is: the chart's own seccomp JSON as
 * `linux.seccomp`, a read-only root, a fresh network namespace, a small tmpfs at /tmp, the session
 * workspace bind-mounted read-write, and the host's /usr, /etc and the application tree read-only.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BundleOptions {
  /** The seccomp profile file (services/kernel-sandbox/profiles/<mode>.json), used unchanged. */
  seccompProfile: string;
  /** Host directories bind-mounted read-only at the same path (the app, Node's install). */
  readOnlyBinds: string[];
  /** Host directory mounted read-write at /workspace. */
  workspace: string;
  uid?: number;
  gid?: number;
}

export interface RuncResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export class RuncBundle {
  readonly dir: string;
  private readonly state: string;
  private readonly config: Record<string, unknown>;

  constructor(opts: BundleOptions) {
    this.dir = mkdtempSync(join(tmpdir(), 'islet-runc-'));
    this.state = join(this.dir, 'state');
    const rootfs = join(this.dir, 'rootfs');
    for (const d of ['usr', 'etc', 'proc', 'dev', 'sys', 'tmp', 'workspace', this.state]) {
      mkdirSync(d.startsWith('/') ? d : join(rootfs, d), { recursive: true });
    }
    chmodSync(join(rootfs, 'tmp'), 0o1777); // runc gives the tmpfs the mode of its mount point
    // Debian's merged /usr: the usual top-level links into it.
    for (const l of ['bin', 'sbin', 'lib', 'lib64']) symlinkSync(`usr/${l}`, join(rootfs, l));
    for (const b of opts.readOnlyBinds) mkdirSync(join(rootfs, b), { recursive: true });

    const spec = spawnSync('runc', ['spec', '--bundle', this.dir], { encoding: 'utf8' });
    if (spec.status !== 0) throw new Error(`runc spec failed: ${spec.stderr}`);
    const config = JSON.parse(readFileSync(join(this.dir, 'config.json'), 'utf8'));
    config.root = { path: 'rootfs', readonly: true };
    config.process.terminal = false;
    config.process.user = { uid: opts.uid ?? 65534, gid: opts.gid ?? 65534 };
    config.process.env = ['PATH=/usr/bin:/bin', 'HOME=/tmp'];
    config.process.noNewPrivileges = true;
    config.hostname = 'islet-sandbox';
    const bind = (src: string, dst: string, ro: boolean) => ({
      destination: dst,
      type: 'bind',
      source: src,
      options: ['rbind', ro ? 'ro' : 'rw', 'nosuid', 'nodev'],
    });
    config.mounts.push(
      bind('/usr', '/usr', true),
      bind('/etc', '/etc', true),
      // The tmpfs goes before the binds: a checkout under /tmp (CI clones there) must not be hidden by it.
      {
        destination: '/tmp',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'nodev', 'noexec', 'mode=1777', 'size=67108864'],
      },
      ...opts.readOnlyBinds.map((b) => bind(b, b, true)),
      bind(opts.workspace, '/workspace', false),
    );
    // The chart's own profile, unchanged: Kubernetes Localhost profiles and OCI linux.seccomp share the format.
    config.linux.seccomp = JSON.parse(readFileSync(opts.seccompProfile, 'utf8'));
    // A fresh network namespace (runc spec's default): nothing shared with the host.
    if (!config.linux.namespaces.some((n: { type: string }) => n.type === 'network')) {
      config.linux.namespaces.push({ type: 'network' });
    }
    this.config = config;
    chmodSync(opts.workspace, 0o777);
  }

  private readonly started: string[] = [];

  /**
   * A command line that runs `args` in a fresh container of this bundle, for a caller that spawns it
   * itself (e.g. the engine's `wrapCommand`); stdio passes straight through runc. `cleanup()` deletes it.
   */
  commandFor(args: string[]): { command: string; args: string[] } {
    const id = `islet-test-${randomUUID().slice(0, 12)}`;
    const bundle = join(this.dir, id);
    mkdirSync(bundle);
    const config = {
      ...this.config,
      root: { path: join(this.dir, 'rootfs'), readonly: true },
      process: { ...(this.config.process as object), args },
    };
    writeFileSync(join(bundle, 'config.json'), JSON.stringify(config, null, 2));
    this.started.push(id);
    return { command: '/usr/sbin/runc', args: ['--root', this.state, 'run', '--bundle', bundle, id] };
  }

  /** Runs one process in a fresh container and deletes it afterwards. */
  run(args: string[], timeoutMs = 30_000): RuncResult {
    const id = `islet-test-${randomUUID().slice(0, 12)}`;
    const config = { ...this.config, process: { ...(this.config.process as object), args } };
    writeFileSync(join(this.dir, 'config.json'), JSON.stringify(config, null, 2));
    try {
      const res = spawnSync('runc', ['--root', this.state, 'run', '--bundle', this.dir, id], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: timeoutMs,
      });
      return { status: res.status, stdout: res.stdout, stderr: res.stderr };
    } finally {
      spawnSync('runc', ['--root', this.state, 'delete', '-f', id], { stdio: 'ignore' });
    }
  }

  cleanup(): void {
    for (const id of this.started)
      spawnSync('runc', ['--root', this.state, 'delete', '-f', id], { stdio: 'ignore' });
    rmSync(this.dir, { recursive: true, force: true });
  }
}
