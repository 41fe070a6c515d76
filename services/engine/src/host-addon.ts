/**
 * How the engine names isolated-vm's native addon to a sandbox host (host-ivm.ts opens it): after the
 * host's script, this argument, then the addon's path as an argument of its own, so that a
 * `wrapCommand` that moves the app's files (the sandbox runtime's installed copy) maps it like the
 * script's. Apart from host-ivm.ts, which loads the addon when imported: the engine imports this.
 * No static import of a Node builtin: in the host, an import of one costs its ES module facade
 * (host.ts).
 */
export const HOST_ADDON_ARG = '--isolated-vm-addon';

/** The addon a host's `process.argv` names (exactly `node script HOST_ADDON_ARG path`), else undefined. */
export function addonArgument(argv: readonly string[]): string | undefined {
  return argv.length === 4 && argv[2] === HOST_ADDON_ARG ? argv[3] : undefined;
}

let addonFile: string | null | undefined;

/**
 * isolated-vm's native addon, the file `require('isolated-vm')` loads (node-gyp-build's choice for
 * this Node's ABI, platform and libc, from the package's own directory), resolved once by the engine.
 * Undefined when it cannot be resolved: the host then imports the package.
 */
export function isolatedVmAddon(): string | undefined {
  if (addonFile === undefined) {
    try {
      const { createRequire } = process.getBuiltinModule('node:module');
      const dir = process
        .getBuiltinModule('node:path')
        .dirname(createRequire(import.meta.url).resolve('isolated-vm'));
      const gypBuild = createRequire(`${dir}/`)('node-gyp-build') as { resolve(dir: string): string };
      addonFile = gypBuild.resolve(dir);
    } catch {
      addonFile = null;
    }
  }
  return addonFile ?? undefined;
}
