/**
 * Bundles the console with esbuild: web/main.tsx → dist/app.js, web/app.css → dist/app.css,
 * web/index.html → dist/index.html. No CDN: everything the page loads is in dist/.
 * Run by scripts/build.sh (incremental) from scripts/toolchain.sh and the gateway's Dockerfile.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = join(import.meta.dirname, '..');
const out = join(root, 'dist');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'web/main.tsx')],
  outfile: join(out, 'app.js'),
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(join(root, 'web/app.css'), join(out, 'app.css'));
copyFileSync(join(root, 'web/index.html'), join(out, 'index.html'));
