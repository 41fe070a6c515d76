/**
 * Process-wide hardening for the processes that serve tenants (gateway, runner), through the
 * islet-harden.node addon (native/islet-harden.c; Node has no prctl). Non-dumpable: another
 * process of the same uid (a sandbox in a non-root pod) cannot read this one's /proc/<pid>/environ,
 * mem or fds, nor ptrace it. no_new_privs: nothing it starts gains privileges by exec.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { PACKAGE_DIR } from './paths.ts';

interface HardenAddon {
  setNonDumpable(): number;
  getDumpable(): number;
  setNoNewPrivs(): number;
  getNoNewPrivs(): number;
}

/** What the kernel holds after `hardenProcess()`, read back with prctl. */
interface HardenReport {
  /** PR_GET_DUMPABLE: 0 when hardened; -1 when the addon is missing. */
  dumpable: number;
  /** PR_GET_NO_NEW_PRIVS: 1 when hardened; -1 when the addon is missing. */
  noNewPrivs: number;
  /** Why a step did not happen (addon not built, prctl refused). */
  notes: string[];
}

export function hardenAddonPath(): string {
  return process.env.ISLET_HARDEN_ADDON_PATH ?? resolve(PACKAGE_DIR, 'build', 'islet-harden.node');
}

let addon: HardenAddon | undefined;
function load(): HardenAddon | undefined {
  if (addon) return addon;
  const path = hardenAddonPath();
  if (!existsSync(path)) return undefined;
  addon = createRequire(import.meta.url)(path) as HardenAddon;
  return addon;
}

/**
 * Marks this process non-dumpable and sets no_new_privs (kept by every child). Call it first thing
 * in a main, before any secret is read. Never throws: the report says what holds.
 */
export function hardenProcess(): HardenReport {
  const a = load();
  if (!a) {
    return {
      dumpable: -1,
      noNewPrivs: -1,
      notes: [`${hardenAddonPath()} is not built (run scripts/build.sh)`],
    };
  }
  const notes: string[] = [];
  if (a.setNonDumpable() !== 0) notes.push('prctl(PR_SET_DUMPABLE, 0) failed');
  if (a.setNoNewPrivs() !== 1) notes.push('prctl(PR_SET_NO_NEW_PRIVS, 1) failed');
  return { dumpable: a.getDumpable(), noNewPrivs: a.getNoNewPrivs(), notes };
}
