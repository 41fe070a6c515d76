/**
 * What the console's Chromium tests share: Debian's Chromium (never a downloaded browser), the
 * screenshot folder, signing in, and the two-width page shots the console README shows.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Screenshots land here (gitignored); `pages/` holds the README's two-width shots. */
export const OUT = resolve(import.meta.dirname, '../../test-output/console');
const CHROMIUM = process.env.ISLET_CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  mkdirSync(join(OUT, 'pages'), { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** Signs `p` in to the console at `base` with `key` and waits for the navigation. */
export async function signIn(p: Page, base: string, key: string): Promise<void> {
  await p.goto(`${base}/console/`);
  await p.getByLabel('API key').fill(key);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** The page as it is, at 1280 px and at 390 px (a phone, where nothing may scroll sideways). */
export async function shots(p: Page, name: string): Promise<void> {
  const size = p.viewportSize() ?? { width: 1280, height: 900 };
  await p.setViewportSize({ width: 1280, height: 900 });
  await p.screenshot({ path: join(OUT, 'pages', `${name}-1280.png`) });
  await p.setViewportSize({ width: 390, height: 844 });
  expect(await p.evaluate('document.documentElement.scrollWidth <= innerWidth')).toBe(true);
  await p.screenshot({ path: join(OUT, 'pages', `${name}-390.png`) });
  await p.setViewportSize(size);
}
