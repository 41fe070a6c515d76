/**
 * Labels of islet_build_info, the same on every component: the image sets ISLET_VERSION and
 * ISLET_REVISION at build time; `node` is the Node.js runtime (a runtime upgrade is a deploy too).
 */
import { readFileSync } from 'node:fs';

function rootVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function buildInfoLabels(): { version: string; revision: string; node: string } {
  return {
    version: process.env.ISLET_VERSION || rootVersion(),
    revision: process.env.ISLET_REVISION || 'unknown',
    node: process.version,
  };
}
