import { type Cluster, startCluster } from '@islet/devstack';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, startAppServer } from '../e2e/helpers.ts';
import { launchChromium, shots, signIn } from './browser-kit.ts';

let cluster: Cluster;
let browser: Browser;
let page: Page;
let a: Api;
let base: string;
let app: Awaited<ReturnType<typeof startAppServer>>;

const wait = { prefer: 'wait=60' };
const run = async (body: Record<string, unknown>) => {
  const res = await a('POST', '/v1/runs', { sessionId: 'sess-health', ...body }, wait);
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
  return res.body as Loose;
};

beforeAll(async () => {
  // Room for a run's ~64 MiB of output beside the queues.
  cluster = await startCluster({
    runners: [{ modes: ['read-only'] }],
    redisMaxMemoryBytes: 2 * 1024 * 1024 * 1024,
  });
  base = cluster.url;
  a = api(base, cluster.devKey);
  app = await startAppServer(async (d) => ({
    status: 200,
    body: JSON.stringify({ structuredContent: { tool: d.body.tool } }),
  }));
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await signIn(page, base, cluster.devKey);
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
    // The page moves to the new run (polled here: the console's CSP refuses Playwright's eval).
    let second = first.id as string;
    for (let i = 0; i < 100 && second === first.id; i++) {
      const hash = (await page.evaluate('location.hash')) as string;
      second = decodeURIComponent(hash).slice('#/runs/'.length);
      if (second === first.id) await new Promise((r) => setTimeout(r, 100));
    }
    expect(second).not.toBe(first.id);
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

describe('a run too big to read whole', () => {
  it('opens a ~64 MiB run usable: bounded record and DOM, the gap marked, the end reachable, the output downloadable', async () => {
    // 31,000 lines of 2,100 characters: ~65 MB, just under the 64 MiB output cap.
    const res = await a('POST', '/v1/runs', {
      code: 'const line = "x".repeat(2094);\nfor (let i = 0; i < 31000; i++) console.log(String(i).padStart(5, "0") + " " + line);\nreturn "printed";',
      description: 'Print about 64 MiB',
      sessionId: 'sess-big',
    });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    // Polled on the run list (summaries), never the record.
    for (let ended = false; !ended; ) {
      const items = (await a('GET', '/v1/runs?sessionId=sess-big')).body.items as Loose[];
      ended = items.some((x) => x.id === id && x.endedAt);
      if (!ended) await new Promise((r) => setTimeout(r, 1000));
    }
    // The API: a bounded record says what it left out and stays small.
    const bounded = await fetch(`${base}/v1/code-runs/${id}?maxLogBytes=1048576`, {
      headers: { authorization: `Bearer ${cluster.devKey}` },
    });
    const text = await bounded.text();
    expect(text.length).toBeLessThan(3 * 1024 * 1024);
    const record = JSON.parse(text);
    expect(record.status).toBe('Completed');
    expect(record.logsOmitted).toMatchObject({ totalLines: 31000, totalBytes: 31000 * 2100 });
    expect(
      record.logsOmitted.after +
        record.logsOmitted.lines +
        record.result.logs.length -
        record.logsOmitted.after,
    ).toBe(31000);
    expect(record.textOmittedChars).toBeGreaterThan(60_000_000);
    expect((await a('GET', `/v1/code-runs/${id}?maxLogBytes=1`)).status).toBe(400);

    await page.goto(`${base}/console/#/runs/${id}`);
    await page.getByRole('heading', { name: 'Print about 64 MiB' }).waitFor({ timeout: 60_000 });
    await page.locator('.log-omitted').waitFor({ timeout: 60_000 });
    expect(await page.locator('.log-omitted').textContent()).toMatch(
      /^[\d,]+ lines \([\d.]+ MiB\) in the middle are not shown here; the download has every line\.$/,
    );
    // A click handler runs: the page's main thread is free.
    const clicked = await page.evaluate(`new Promise((resolve) => {
      const h = document.getElementById('logs-h');
      h.addEventListener('click', () => resolve('handled'), { once: true });
      setTimeout(() => h.click(), 0);
    })`);
    expect(clicked).toBe('handled');
    expect((await page.evaluate('document.getElementsByTagName("*").length')) as number).toBeLessThan(3000);
    expect(await page.locator('h2#logs-h').textContent()).toContain('31,000');
    // The view opens at the end: the last line, and few rows in the DOM.
    await page.locator('li[data-line="31000"]').waitFor();
    expect(await page.locator('li[data-line="31000"]').textContent()).toContain('30999 xxx');
    expect(await page.locator('.log-viewport li').count()).toBeLessThan(200);
    await shots(page, 'run-64mib');
    // Half-way down the kept rows is the gap's marker row.
    await page.locator('.log-viewport').evaluate((el) => {
      el.scrollTop = el.scrollHeight / 2 - el.clientHeight / 2;
      el.dispatchEvent(new Event('scroll'));
    });
    expect(await page.locator('.log-gap').textContent()).toMatch(
      /[\d,]+ lines \([\d.]+ MiB\) not shown here/,
    );
    // The full output: every line, streamed as text by the gateway.
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 120_000 }),
      page.getByRole('button', { name: 'Download the full output' }).first().click(),
    ]);
    const { statSync } = await import('node:fs');
    expect(statSync(await download.path()).size).toBe(31000 * 2101);
  }, 600_000);
});
