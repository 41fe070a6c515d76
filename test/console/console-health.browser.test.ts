/**
 * More of the operator's console in Debian's Chromium (playwright-core, never a downloaded
 * browser) against a real local cluster: the Health page draws the gateway's health series and
 * follows new runs with no click; Re-run from the run page keeps the run's connections. Pages are
 * saved at 1280 and 390 px in test-output/console/pages/ (gitignored; the README's copies are taken
 * from there).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Cluster, startCluster } from '@islet/devstack';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, startAppServer } from '../e2e/helpers.ts';

const OUT = resolve(import.meta.dirname, '../../test-output/console');
const CHROMIUM = process.env.ISLET_CHROMIUM_PATH ?? '/usr/bin/chromium';

let cluster: Cluster;
let browser: Browser;
let page: Page;
let a: Api;
let base: string;
let app: Awaited<ReturnType<typeof startAppServer>>;

/** The page as it is, at 1280 px and at 390 px (a phone), for the README. */
async function shots(p: Page, name: string) {
  await p.setViewportSize({ width: 1280, height: 900 });
  await p.screenshot({ path: join(OUT, 'pages', `${name}-1280.png`) });
  await p.setViewportSize({ width: 390, height: 844 });
  expect(await p.evaluate('document.documentElement.scrollWidth <= innerWidth')).toBe(true);
  await p.screenshot({ path: join(OUT, 'pages', `${name}-390.png`) });
  await p.setViewportSize({ width: 1280, height: 900 });
}

const wait = { prefer: 'wait=60' };
const run = async (body: Record<string, unknown>) => {
  const res = await a('POST', '/v1/runs', { sessionId: 'sess-health', ...body }, wait);
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
  return res.body as Loose;
};

beforeAll(async () => {
  mkdirSync(join(OUT, 'pages'), { recursive: true });
  cluster = await startCluster({ runners: [{ modes: ['read-only'] }] });
  base = cluster.url;
  a = api(base, cluster.devKey);
  app = await startAppServer(async (d) => ({
    status: 200,
    body: JSON.stringify({ structuredContent: { tool: d.body.tool } }),
  }));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/console/`);
  await page.getByLabel('API key').fill(cluster.devKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await cluster?.stop();
});

describe('the Health page', () => {
  it('charts the last hour from the gateway and follows new runs with no click', async () => {
    for (let i = 0; i < 2; i++)
      expect((await run({ code: `return ${i}`, description: 'Return' })).status).toBe('Completed');
    expect((await run({ code: 'throw new Error("no")', description: 'Throw' })).status).toBe('Failed');
    await page
      .getByRole('navigation', { name: 'Console' })
      .getByRole('link', { name: 'Health', exact: true })
      .click();
    await page.getByRole('heading', { name: 'Health', exact: true }).waitFor();
    const runs = page.locator('[data-tile="runs"] dd');
    await runs.filter({ hasText: /^3/ }).waitFor();
    expect(await runs.textContent()).toContain('2 Completed, 1 Failed');
    expect(await page.locator('[data-tile="failures"] dd').textContent()).toContain('1 exception');
    expect(await page.locator('[data-tile="latency"] dd').textContent()).toMatch(/\d+ ms|\d\.\d s/);
    // Six charts drawn by uPlot (canvas), each titled.
    const titles = await page.locator('figure.chart figcaption').allTextContents();
    expect(titles).toEqual([
      'Runs ended per second',
      'Latency, creation to end',
      'Failures by kind',
      'Queue depth',
      'Runner slots',
      'Decisions pending',
    ]);
    expect(await page.locator('figure.chart canvas').count()).toBe(6);
    // An admin key sees the whole cluster: queue depth and slots per mode once a sample is in.
    expect(await page.locator('.hint').first().textContent()).toContain('Whole cluster');
    await page
      .locator('figure.chart', { hasText: 'Runner slots' })
      .getByText('read-only live')
      .waitFor({ timeout: 30_000 });
    // A run ending now shows on the open page at its next refresh, with no click.
    expect((await run({ code: 'return 9', description: 'Return later' })).status).toBe('Completed');
    await runs.filter({ hasText: /^4/ }).waitFor({ timeout: 30_000 });
    await shots(page, 'health');
  }, 120_000);
});

describe('Re-run', () => {
  it("keeps the run's connections", async () => {
    const made = async (name: string) => {
      const c = await a('POST', '/v1/connections', {
        name,
        kind: 'http',
        url: app.url,
        tools: [{ name: 'ping', policy: 'allow', description: 'Answers' }],
      });
      expect(c.status, JSON.stringify(c.body)).toBe(201);
      return c.body.id as string;
    };
    const mail = await made('Mail');
    await made('Other');
    const first = await run({
      code: 'return Object.keys(apps).sort()',
      description: 'Only Mail',
      connections: [mail],
    });
    expect(first.status).toBe('Completed');
    expect(first.connections).toEqual([mail]);
    await page.goto(`${base}/console/#/runs/${first.id}`);
    await page.getByRole('heading', { name: 'Only Mail' }).waitFor();
    await page.getByRole('button', { name: 'Re-run' }).first().click();
    await page.waitForFunction(
      `location.hash.startsWith('#/runs/') && !location.hash.endsWith(${JSON.stringify(first.id)})`,
    );
    const second = decodeURIComponent((await page.evaluate('location.hash')) as string).slice(
      '#/runs/'.length,
    );
    let record: Loose;
    for (let i = 0; i < 60; i++) {
      record = (await a('GET', `/v1/code-runs/${second}`)).body;
      if (record.status === 'Completed') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(record.connections).toEqual([mail]);
    expect(record.result).toEqual(first.result);
  }, 90_000);
});
