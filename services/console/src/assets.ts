/**
 * The built console (dist/, made by scripts/build.sh) as the gateway serves it: file name →
 * bytes and content type, read once at start. `CONSOLE_CSP` is the page's Content-Security-Policy:
 * nothing inline, nothing from another origin.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';

const CONSOLE_DIST = join(import.meta.dirname, '..', 'dist');

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

interface ConsoleAsset {
  body: Buffer;
  type: string;
}

/** The files of dist/ by name; empty when the console was not built (the gateway then says so). */
export function loadConsoleAssets(dir = CONSOLE_DIST): Map<string, ConsoleAsset> {
  const assets = new Map<string, ConsoleAsset>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) assets.set(name, { body: readFileSync(join(dir, name)), type });
  }
  return assets;
}
