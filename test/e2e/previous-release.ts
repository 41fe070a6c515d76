/**
 * A previous release's `services/` as a tree of its own, to run its processes beside this
 * release's (mixed releases end to end): `git archive <rev> services` in a temporary directory, a
 * `node_modules` there whose third-party packages are this checkout's (links) and whose `@islet/*`
 * are the tree's own services, and the parts git does not hold (the kernel launcher's build, the
 * engine's sandbox host build, the console's build) copied from this checkout when built — a host
 * build that does not match its sources runs from TypeScript (engine host-build.ts). Its devstack's
 * `startCluster` (imported from the tree) starts that release's gateways and runners.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { idleSnapshot, type startCluster, untilLiveOnly } from '@islet/devstack';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface PreviousRelease {
  dir: string;
  startCluster: typeof startCluster;
  remove(): void;
}

export async function previousRelease(rev: string): Promise<PreviousRelease> {
  const dir = mkdtempSync(join(tmpdir(), `islet-${rev}-`));
  try {
    execFileSync('bash', [
      '-c',
      'git -C "$1" archive "$2" services package.json | tar -x -C "$3"',
      '-',
      ROOT,
      rev,
      dir,
    ]);
    mkdirSync(join(dir, 'node_modules', '@islet'), { recursive: true });
    for (const name of readdirSync(join(ROOT, 'node_modules'))) {
      if (name === '@islet') continue;
      symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
    }
    for (const name of readdirSync(join(dir, 'services')))
      symlinkSync(join(dir, 'services', name), join(dir, 'node_modules', '@islet', name));
    for (const built of ['services/kernel-sandbox/build', 'services/engine/dist', 'services/console/dist'])
      if (existsSync(join(ROOT, built))) cpSync(join(ROOT, built), join(dir, built), { recursive: true });
    const devstack = (await import(pathToFileURL(join(dir, 'services/devstack/src/index.ts')).href)) as {
      startCluster: typeof startCluster;
    };
    // Its devstack's restartRunner resolves at the ready line; the registration its kill left could
    // still take the next submit (this checkout's devstack restart-wait.ts): waited for here too.
    const start: typeof startCluster = async (options) => {
      const cluster = await devstack.startCluster(options);
      const restart = cluster.restartRunner;
      cluster.restartRunner = async (i) => {
        await cluster.killRunner(i);
        const left = await idleSnapshot(cluster.redisConfig, cluster.runners[i]?.modes ?? []);
        await restart(i);
        await untilLiveOnly(cluster.redisConfig, left);
      };
      return cluster;
    };
    return {
      dir,
      startCluster: start,
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
