/** Where the launcher and the helpers live, resolved from this package (the tests' probe, profile and rules paths are in test/test-helpers.ts). */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `services/kernel-sandbox`, resolved from this file so it works from any working directory. */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The native launcher, built by `scripts/build.sh`. `ISLET_JAIL_PATH` overrides it (e.g. `/usr/local/bin/islet-jail` in the image). */
export function jailPath(): string {
  return process.env.ISLET_JAIL_PATH ?? resolve(PACKAGE_DIR, 'build', 'islet-jail');
}

/** The workspace file helper (openat2 beneath the workspace root). `ISLET_FILES_HELPER_PATH` overrides it. */
export function filesHelperPath(): string {
  return process.env.ISLET_FILES_HELPER_PATH ?? resolve(PACKAGE_DIR, 'build', 'islet-files');
}
