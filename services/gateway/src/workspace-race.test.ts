/**
 * A check-then-use attack on workspace files: a tenant that can change its own workspace (a skill,
 * a program) swaps a directory the store is about to use with a symlink to somewhere else, as fast
 * as it can (renameat2 RENAME_EXCHANGE in a loop), while the store serves thousands of reads, lists,
 * writes, renames and removes through that directory, by the store, the files binding and the HTTP
 * routes. Targets: `/proc/self` (the server's own environment), `/` (the host) and another tenant's
 * workspace. Zero escapes: nothing but the planted inside content is ever returned or listed, and
 * nothing outside the workspace is created, moved or removed.
 *
 * Against the former path-checking store (lstat/realpath, then open by path) this test found
 * escapes in every target within the first few hundred requests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeFilesHelpers, createFilesBinding, WorkspaceStore } from '@islet/kernel-sandbox';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { filesRoutes } from './routes/files.ts';

const INSIDE = 'INSIDE-CONTENT';
const token = `islet-race-${process.pid}-${Date.now()}`;
const base = mkdtempSync(join(tmpdir(), 'islet-race-'));
const store = new WorkspaceStore({ root: join(base, 'root') });
const outsideCanary = join(tmpdir(), `${token}-canary`);
const swappers: ChildProcess[] = [];
const app = Fastify();
app.register(filesRoutes({ authenticate: async () => {}, resolveTenant: () => 'attacker', store }));

afterAll(async () => {
  for (const s of swappers) s.kill('SIGKILL');
  await app.close();
  closeFilesHelpers();
  rmSync(base, { recursive: true, force: true });
  rmSync(outsideCanary, { force: true });
  for (const dir of [tmpdir(), '/'])
    for (const name of readdirSync(dir)) if (name.startsWith(token)) rmSync(join(dir, name), { force: true });
});

// renameat2(RENAME_EXCHANGE) in a tight loop, through ctypes: the two names trade places atomically.
const SWAPPER = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
f = libc.renameat2
a, b = sys.argv[1].encode(), sys.argv[2].encode()
print('ready', flush=True)
while True:
    f(-100, a, -100, b, 2)
`;

async function startSwapper(a: string, b: string): Promise<ChildProcess> {
  const child = spawn('python3', ['-c', SWAPPER, a, b], { stdio: ['ignore', 'pipe', 'inherit'] });
  swappers.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', () => resolve());
  });
  return child;
}

async function stopSwapper(child: ChildProcess, dir: string, link: string): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  // Leave the real directory under its own name (the loop may have stopped mid-swap).
  if (lstatSync(dir).isSymbolicLink()) {
    const tmp = `${dir}.swap`;
    const { renameSync } = await import('node:fs');
    renameSync(dir, tmp);
    renameSync(link, dir);
    renameSync(tmp, link);
  }
}

interface Target {
  name: string;
  /** Where the symlink points. */
  target: () => string;
  /** Files planted inside `d/` (content INSIDE); their names also exist under the target. */
  planted: string[];
  /** Relative names (under `d/`) to write, rename to and remove; outside they must never appear. */
  outsideDir: () => string;
}

const victimDir = () => store.dirFor('victim', 's1');
const TARGETS: Target[] = [
  {
    name: '/proc/self',
    target: () => '/proc/self',
    planted: ['environ', 'status', 'cmdline'],
    outsideDir: () => '/proc/self',
  },
  {
    name: '/',
    target: () => '/',
    planted: ['etc/passwd', 'etc/hostname', `tmp/${token}-canary`],
    outsideDir: () => '/',
  },
  {
    name: "another tenant's workspace",
    target: () => victimDir(),
    planted: ['secret.txt', 'notes/plan.md'],
    outsideDir: () => victimDir(),
  },
];

describe('workspace store under a directory/symlink swap race', () => {
  for (const t of TARGETS) {
    it(`never escapes to ${t.name}`, { timeout: 120_000 }, async () => {
      const victim = await store.ensure('victim', 's1');
      mkdirSync(join(victim, 'notes'), { recursive: true });
      writeFileSync(join(victim, 'secret.txt'), 'VICTIM-SECRET');
      writeFileSync(join(victim, 'notes', 'plan.md'), 'VICTIM-PLAN');
      writeFileSync(outsideCanary, 'OUTSIDE-CANARY');
      const victimBefore = readdirSync(victim).sort();

      const session = `att-${TARGETS.indexOf(t)}`;
      const dir = await store.ensure('attacker', session);
      const d = join(dir, 'd');
      for (const p of t.planted) {
        mkdirSync(join(d, p, '..'), { recursive: true });
        writeFileSync(join(d, p), INSIDE);
      }
      const link = join(dir, 'l');
      const { symlinkSync } = await import('node:fs');
      symlinkSync(t.target(), link);

      const ws = store.workspace('attacker', session);
      // Both ways a binding is built: on the workspace dir itself, and on the store's workspace.
      const bindings = [
        createFilesBinding({ mode: 'workspace-write', workspaceDir: dir, enforcement: 'full' }),
        createFilesBinding({
          mode: 'workspace-write',
          workspaceDir: dir,
          workspace: ws,
          enforcement: 'full',
        }),
      ];
      const leaks: string[] = [];
      const allowedListed = new Set(t.planted.map((p) => `d/${p}`));
      let insideReads = 0;
      const checkContent = (what: string, content: string) => {
        if (content !== INSIDE) leaks.push(`${what}: ${JSON.stringify(content.slice(0, 80))}`);
        else insideReads++;
      };
      const swapper = await startSwapper(d, link);
      let answered = 0;
      try {
        const N = 640;
        for (let round = 0; round < N; round++) {
          const p = t.planted[round % t.planted.length]!;
          const ops: Array<Promise<void>> = [
            ws.read(`d/${p}`).then((b) => checkContent(`read d/${p}`, b.toString())),
            bindings[round % 2]!({
              binding: 'files.read',
              argsJson: JSON.stringify({ path: `d/${p}` }),
            }).then((o) => {
              if (o.type === 'result') checkContent(`files.read d/${p}`, JSON.parse(o.valueJson).content);
            }),
            app.inject({ method: 'GET', url: `/v1/sessions/${session}/files/d/${p}` }).then((r) => {
              if (r.statusCode === 200) checkContent(`GET d/${p}`, r.body);
              else if (r.statusCode >= 500) leaks.push(`GET d/${p}: ${r.statusCode} ${r.body}`);
            }),
            app.inject({ method: 'GET', url: `/v1/sessions/${session}/files?prefix=d` }).then((r) => {
              for (const f of (r.json().files ?? []) as Array<{ path: string }>)
                if (!allowedListed.has(f.path) && !f.path.startsWith(`d/${token}`))
                  leaks.push(`GET list: ${f.path}`);
            }),
            ws.rename(`d/${token}-w${(round + 1) % 7}`, `d/${token}-r${round % 5}`).then(() => undefined),
            ws.list('d').then((files) => {
              for (const f of files)
                if (!allowedListed.has(f.path) && !f.path.startsWith(`d/${token}`))
                  leaks.push(`list: ${f.path}`);
            }),
            ws.write(`d/${token}-w${round % 7}`, Buffer.from(INSIDE)).then(() => undefined),
            ws
              .remove(`d/${p}`.endsWith('canary') ? `d/${p}` : `d/${token}-w${(round + 3) % 7}`)
              .then(() => undefined),
          ];
          const results = await Promise.allSettled(ops);
          answered += results.length;
        }
      } finally {
        await stopSwapper(swapper, d, link);
      }
      expect(answered).toBeGreaterThanOrEqual(5000);
      // The race was real: many reads landed while `d` was the directory (the rest were refused).
      expect(insideReads).toBeGreaterThan(50);

      // Nothing created, moved or removed outside.
      const outside = t.outsideDir();
      const created = existsSync(outside)
        ? readdirSync(outside).filter((n) => n.startsWith(`${token}-w`) || n.startsWith(`${token}-r`))
        : [];
      expect(created).toEqual([]);
      expect(existsSync(outsideCanary)).toBe(true);
      expect(readdirSync(victim).sort()).toEqual(victimBefore);
      expect(leaks.slice(0, 10)).toEqual([]);
    });
  }
});
