/**
 * The operator's console in Debian's Chromium (playwright-core, never a downloaded browser)
 * against a real local cluster: a run printing ~64 MiB leaves the run page responsive with a
 * bounded DOM; a 600 KB program with unclosed comments highlights only a bounded prefix.
 * Screenshots go to test-output/console/ (gitignored).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Cluster, startCluster } from '@islet/devstack';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, sleep } from '../e2e/helpers.ts';

const OUT = resolve(import.meta.dirname, '../../test-output/console');
const CHROMIUM = process.env.ISLET_CHROMIUM_PATH ?? '/usr/bin/chromium';

let cluster: Cluster;
let browser: Browser;
let page: Page;
let a: Api;
let base: string;

const shot = (p: Page, name: string) => p.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });

async function signIn(p: Page, key: string) {
  await p.goto(`${base}/console/`);
  await p.getByLabel('API key').fill(key);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** Submits a run_code run and waits for its end (polled: a loaded machine may outlast a Prefer wait). */
async function runToEnd(code: string, description: string, session = 'sess-ops') {
  const res = await a('POST', '/v1/runs', { code, description, sessionId: session, turnId: 't', callId: 'c' });
  expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(202);
  const id = res.body.id as string;
  for (;;) {
    const r = await a('GET', `/v1/code-runs/${id}`);
    if (r.body.result) return { id, status: r.body.status as string };
    await sleep(1000);
  }
}

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  // Room for a run's ~64 MiB of output (kept in its record) beside the queues.
  cluster = await startCluster({
    runners: [{ modes: ['read-only'], concurrency: 2 }],
    redisMaxMemoryBytes: 2 * 1024 * 1024 * 1024,
  });
  base = cluster.gatewayUrls[0]!;
  a = api(base, cluster.devKey);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await signIn(page, cluster.devKey);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
});

describe('the run page under huge output and hostile programs', () => {
  it('stays responsive on a run that printed ~64 MiB: bounded DOM, the gap marked, the end reachable', async () => {
    // 16,000 lines of 4,000 characters: ~61 MiB, just inside the run's 64 MiB of output.
    const run = await runToEnd(
      'const line = "x".repeat(3994);\nfor (let i = 0; i < 16000; i++) console.log(String(i).padStart(5, "0") + " " + line);\nreturn "printed";',
      'Print about 64 MiB',
    );
    expect(run.status).toBe('Completed');
    await page.goto(`${base}/console/#/runs/${run.id}`);
    await page.locator('.log-gap').waitFor({ timeout: 60_000 });
    await shot(page, 'ops-01-run-64mib');
    // A click handler runs and its effect is visible: the page's main thread is free.
    const clicked = await page.evaluate(`new Promise((resolve) => {
      const h = document.getElementById('logs-h');
      h.addEventListener('click', () => resolve('handled'), { once: true });
      setTimeout(() => h.click(), 0);
    })`);
    expect(clicked).toBe('handled');
    const nodes = (await page.evaluate('document.getElementsByTagName("*").length')) as number;
    expect(nodes).toBeLessThan(3000);
    expect(await page.locator('h2#logs-h').textContent()).toContain('16,000');
    expect(await page.locator('.log-gap').textContent()).toMatch(/[\d,]+ lines \([\d.]+ MiB\) not shown here/);
    // The end of the output is one scroll away, and still few rows are in the DOM.
    await page.locator('.log-viewport').evaluate((el) => {
      el.scrollTop = el.scrollHeight;
      el.dispatchEvent(new Event('scroll'));
    });
    await page.locator('li[data-line="16000"]').waitFor();
    expect(await page.locator('.log-viewport li').count()).toBeLessThan(200);
    // Each 4,000-character line is cut in the view, saying by how much.
    expect(await page.locator('li[data-line="16000"] .truncation-marker').textContent()).toContain('2,000 more characters');
    await page.getByRole('button', { name: 'Download the full output' }).waitFor();
  }, 240_000);

  it('highlights only a bounded prefix of a 600 KB program with unclosed comments', async () => {
    const attack = `return 1;\n/*${'x/*'.repeat(200_000)}`;
    const run = await runToEnd(attack, 'An unclosed comment, 600 KB');
    await page.goto(`${base}/console/#/runs/${run.id}`);
    await page.locator('.code .truncation-marker').waitFor({ timeout: 30_000 });
    const covered = Number(await page.locator('pre.code').getAttribute('data-highlighted-chars'));
    expect(covered).toBe(64 * 1024);
    // keyword, plain, number, plain, one comment: the later `/*`s were never rescanned as starts.
    expect(await page.locator('pre.code code > span').count()).toBeLessThan(10);
    expect(await page.locator('.code .tok-comment').count()).toBe(1);
    expect(await page.evaluate('document.getElementsByTagName("*").length')).toBeLessThan(2000);
  }, 120_000);
});
