/** Where the launcher, the probe and the profiles live. One set of files, used by the launcher, the tests and the chart. */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SandboxMode } from '@islet/protocol';

/** `services/kernel-sandbox`, resolved from this file so it works from any working directory. */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The native launcher, built by `scripts/build.sh`. `ISLET_JAIL_PATH` overrides it (e.g. `/usr/local/bin/islet-jail` in the image). */
export function jailPath(): string {
  return process.env.ISLET_JAIL_PATH ?? resolve(PACKAGE_DIR, 'build', 'islet-jail');
}

/** The test probe that tries denied and allowed operations from inside a sandbox. */
export function probePath(): string {
  return resolve(PACKAGE_DIR, 'build', 'islet-probe');
}

/** The mode's seccomp profile (OCI / Kubernetes Localhost JSON). The chart copies exactly these files. */
export function profilePath(mode: SandboxMode): string {
  return resolve(PACKAGE_DIR, 'profiles', `${mode}.json`);
}

/** The machine-readable file-system rules for every mode. */
export function fsRulesPath(): string {
  return resolve(PACKAGE_DIR, 'profiles', 'fs-rules.json');
}

/** The workspace file helper (openat2 beneath the workspace root). `ISLET_FILES_HELPER_PATH` overrides it. */
export function filesHelperPath(): string {
  return process.env.ISLET_FILES_HELPER_PATH ?? resolve(PACKAGE_DIR, 'build', 'islet-files');
}
