/**
 * Skills in a runner POD: the runner is not root there (uid 10001), so a skill runs as the runner's
 * own uid, with no per-run uid to count processes by and no sweep by uid afterwards. The runner's
 * skill path (createSkillExecutor → runSkill → islet-jail --supervise, --deny of the secret
 * directory) runs here as a fresh non-root uid (setpriv), started like main.ts: hardened, its
 * secret directory protected, the secret files readable by that same uid. Each skill plants
 * setsid, double-fork, nohup and python fork+setsid escapes and attacks the secrets (direct, by
 * listing, relative, through /proc/self/root, symlink, hard link, the runner's /proc environ).
 * Asserted: not one secret byte reaches the skill, and when the skill ends (exit or timeout) no
 * process of that uid is left but the runner itself.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { filesHelperPath, hardenAddonPath, jailPath, sandboxRuntime } from '@islet/kernel-sandbox';
import { killAllOf, processesOf } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

if (process.getuid?.() !== 0)
  throw new Error('starting the runner as another non-root uid (setpriv) requires root (CI runs as root)');

const UID = 180_000 + Math.floor(Math.random() * 10_000);
const TOKEN = `tok-${Math.random().toString(36).slice(2)}-not-for-skills`;

const ATTACKS = (secretDir: string) => `
S='${secretDir}'
cat "$S/ISLET_INTERNAL_TOKEN" 2>/dev/null && echo "LEAK direct"
ls "$S" 2>/dev/null && echo "LEAK listing"
(cd / && cat ".$S/ISLET_INTERNAL_TOKEN") 2>/dev/null && echo "LEAK relative"
cat "/proc/self/root$S/ISLET_INTERNAL_TOKEN" 2>/dev/null && echo "LEAK proc-root"
ln -s "$S/ISLET_INTERNAL_TOKEN" ./link 2>/dev/null; cat ./link 2>/dev/null && echo "LEAK symlink"
ln "$S/ISLET_INTERNAL_TOKEN" ./hard 2>/dev/null && cat ./hard 2>/dev/null && echo "LEAK hardlink"
RUNNER=$(awk '/^PPid:/{print $2}' /proc/$PPID/status)
echo "runner $RUNNER"
cat /proc/$RUNNER/environ 2>/dev/null | tr '\\0' '\\n' | grep -q . && echo "LEAK runner-environ"
# The token in two quoted halves, so that the jobs in the runner's own argv do not hold it whole
# (and no tool beyond the shell: rev is not in util-linux on every Debian).
T='${TOKEN.slice(0, 8)}''${TOKEN.slice(8)}'
grep -rl -- "$T" /proc/$RUNNER/ 2>/dev/null | head -1 | grep -q . && echo "LEAK runner-proc"
echo "uid $(id -u)"
`;

const ESCAPES = `
setsid sleep 41.1 & echo "pid $!"
( (sleep 41.2 & echo "pid $!") & )
nohup sleep 41.3 >/dev/null 2>&1 & echo "pid $!"
python3 -c 'import os,time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("pid", os.getpid(), flush=True)
        time.sleep(41.4)
    os._exit(0)
time.sleep(0.2)'
for i in 1 2 3 4; do (setsid sleep 41.5 &) ; done
sleep 0.3; echo started
`;

interface Report {
  pid: number;
  uid: number;
  dumpable: number;
  runnerReadsToken: boolean;
  result: { success: boolean; output: string; error: string; exitCode: number };
}

describe('skills in a runner pod (runner not root): process trees killed, secrets unreachable', () => {
  const base = mkdtempSync(join(tmpdir(), 'islet-pod-runner-'));
  const secretDir = join(base, 'secrets'); // stands in for /var/run/secrets/islet
  const workspaceRoot = join(base, 'workspace');
  const bin = join(base, 'bin');
  let runner: ChildProcess | undefined;
  let stdout = '';
  const reports: Report[] = [];

  beforeAll(async () => {
    chmodSync(base, 0o755);
    for (const d of [secretDir, workspaceRoot, bin]) spawnSync('mkdir', ['-p', d]);
    // The runner's uid owns and reads its secrets, as with fsGroup in the pod; DAC lets a skill
    // of the same uid in, so only the jail can keep it out.
    writeFileSync(join(secretDir, 'ISLET_INTERNAL_TOKEN'), `${TOKEN}\n`, { mode: 0o400 });
    chownSync(join(secretDir, 'ISLET_INTERNAL_TOKEN'), UID, UID);
    chownSync(secretDir, UID, UID);
    chmodSync(secretDir, 0o700);
    chownSync(workspaceRoot, UID, UID);
    // What the non-root uid executes must be reachable by it, as /app is in the image: the runner's
    // skill path bundled, the native launcher and helpers copied, Node from the sandbox runtime.
    const built = spawnSync(
      resolve(import.meta.dirname, '../../../node_modules/.bin/esbuild'),
      [
        join(import.meta.dirname, 'pod-runner-skill.ts'),
        '--bundle',
        '--platform=node',
        '--format=esm',
        '--log-level=error',
        `--outfile=${join(bin, 'runner.mjs')}`,
        "--banner:js=import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
      ],
      { encoding: 'utf8' },
    );
    if (built.status !== 0) throw new Error(`esbuild: ${built.stderr}`);
    for (const [src, name] of [
      [jailPath(), 'islet-jail'],
      [filesHelperPath(), 'islet-files'],
      [hardenAddonPath(), 'islet-harden.node'],
    ] as const)
      copyFileSync(src, join(bin, name));
    chmodSync(bin, 0o755);
    for (const f of readdirSync(bin)) chmodSync(join(bin, f), 0o755);

    const jobs = [
      // Ends by itself right after planting its escapes: the tree must die with it.
      { mode: 'danger-full-access', code: `${ATTACKS(secretDir)}${ESCAPES}exit 0`, timeout: 20_000 },
      { mode: 'workspace-write', code: `${ATTACKS(secretDir)}${ESCAPES}exit 0`, timeout: 20_000 },
      // Still running at its deadline: the whole tree is killed at the timeout.
      { mode: 'read-only', code: `${ATTACKS(secretDir)}${ESCAPES}sleep 60`, timeout: 4_000 },
    ];
    runner = spawn(
      'setpriv',
      [
        '--reuid',
        String(UID),
        '--regid',
        String(UID),
        '--clear-groups',
        '--pdeathsig',
        'KILL',
        sandboxRuntime().node,
        join(bin, 'runner.mjs'),
        secretDir,
        workspaceRoot,
        JSON.stringify(jobs),
      ],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
        // The pod's environment: no secret values, the binaries where the image has them.
        env: {
          PATH: '/usr/local/bin:/usr/bin:/bin',
          ISLET_JAIL_PATH: join(bin, 'islet-jail'),
          ISLET_FILES_HELPER_PATH: join(bin, 'islet-files'),
          ISLET_HARDEN_ADDON_PATH: join(bin, 'islet-harden.node'),
        },
      },
    );
    runner.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    const deadline = Date.now() + 90_000;
    while (!stdout.includes('\ndone\n') && Date.now() < deadline) {
      if (runner.exitCode !== null) throw new Error(`runner exited ${runner.exitCode}: ${stdout}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const line of stdout.split('\n')) if (line.startsWith('{')) reports.push(JSON.parse(line) as Report);
  }, 120_000);

  afterAll(async () => {
    runner?.stdin?.end();
    runner?.kill('SIGKILL');
    await killAllOf(UID);
    rmSync(base, { recursive: true, force: true });
  });

  it('the runner runs as the non-root uid, hardened, and reads its own secret', () => {
    expect(reports).toHaveLength(3);
    for (const r of reports) {
      expect(r.uid).toBe(UID);
      expect(r.dumpable).toBe(0);
      expect(r.runnerReadsToken).toBe(true);
      expect(r.result.output).toContain(`uid ${UID}`); // the skill shares the runner's uid
    }
  });

  it.each([
    [0, 'danger-full-access'],
    [1, 'workspace-write'],
    [2, 'read-only'],
  ])('skill %i (%s): not one secret byte, by any path', (i) => {
    const { output, error } = reports[i]!.result;
    expect(output).toContain('started');
    // The skill found the runner's pid (its launcher's parent), so the /proc attacks aimed right.
    expect(output).toMatch(new RegExp(`^runner ${reports[i]!.pid}$`, 'm'));
    expect(output).not.toMatch(/LEAK/);
    expect(`${output}${error}`).not.toContain(TOKEN);
  });

  it('a skill that exits: every escaped process died with it (checked while the runner lives on)', () => {
    for (const r of reports.slice(0, 2)) {
      expect(r.result.exitCode).toBe(0);
      expect([...r.result.output.matchAll(/^pid (\d+)$/gm)]).toHaveLength(4); // every escape started
    }
    expect(runner?.exitCode).toBeNull();
    expect(processesOf(UID)).toEqual([reports[0]!.pid]);
  });

  it('a skill at its timeout: exit 124, the whole tree killed', () => {
    const r = reports[2]!.result;
    expect(r.exitCode).toBe(124);
    expect(r.error).toContain('timed out after 4000 ms; the program was killed');
    expect([...r.output.matchAll(/^pid (\d+)$/gm)]).toHaveLength(4);
    for (const [, pid] of r.output.matchAll(/^pid (\d+)$/gm)) {
      let alive = false;
      try {
        alive = !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
      } catch {}
      expect(alive, `pid ${pid}`).toBe(false);
    }
    expect(processesOf(UID)).toEqual([reports[2]!.pid]);
  });
});
