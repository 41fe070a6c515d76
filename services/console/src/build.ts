/**
 * Bundles the console with esbuild: web/main.tsx → dist/app.js, web/app.css → dist/app.css,
 * web/index.html → dist/index.html. No CDN: everything the page loads is in dist/.
 * Run by scripts/build.sh (incremental) from scripts/toolchain.sh and the gateway's Dockerfile.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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
// uPlot's own stylesheet goes first, in the same file: the page loads one stylesheet from 'self'.
const uplotCss = readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.min.css'), 'utf8');
writeFileSync(join(out, 'app.css'), `${uplotCss}\n${readFileSync(join(root, 'web/app.css'), 'utf8')}`);
copyFileSync(join(root, 'web/index.html'), join(out, 'index.html'));
