/**
 * isolated-vm as the sandbox host loads it. The engine resolves the package's native addon once (the
 * file `require('isolated-vm')` would load: node-gyp-build's choice for this Node's ABI, platform and
 * libc) and names it on the host's command line (host-addon.ts); the host opens that file with
 * `process.dlopen`. `import 'isolated-vm'` took ~23 M instructions of a host's ~470 M start (~5 %):
 * an ES module importing a CommonJS one goes through Node's CommonJS translator and loader, and
 * isolated-vm.js through node-gyp-build (fs, path and os, a directory scan of the prebuilds), every
 * Node builtin of that compiled from source in a host, which runs without Node's snapshot and so
 * without its code cache (test/bench/README.md, round 39 `host-start`). The object is the same one
 * (`exports.ivm` of the same addon). Without the argument (tests and benches that install the
 * harness in their own process, a host started by hand) the package is imported as before.
 */
import type ivm from 'isolated-vm';
import { addonArgument } from './host-addon.ts';

/** `exports.ivm` of the addon file, or undefined when it cannot be opened here (the package is imported). */
function openAddon(file: string): typeof ivm | undefined {
  try {
    const module = { exports: {} as { ivm?: typeof ivm } };
    process.dlopen(module, file);
    if (module.exports.ivm !== undefined) return module.exports.ivm;
    process.stderr.write(`islet host: not an isolated-vm addon: ${file}\n`);
  } catch (e) {
    process.stderr.write(`islet host: could not open the isolated-vm addon: ${String(e)}\n`);
  }
  return undefined;
}

const addon = addonArgument(process.argv);
export const isolatedVm: typeof ivm =
  (addon === undefined ? undefined : openAddon(addon)) ?? (await import('isolated-vm')).default;
