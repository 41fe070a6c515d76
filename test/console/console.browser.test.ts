import { join } from 'node:path';
import { type Cluster, startCluster } from '@islet/devstack';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, sleep, startAppServer } from '../e2e/helpers.ts';
import { launchChromium, OUT, signIn } from './browser-kit.ts';

let cluster: Cluster;
let browser: Browser;
let page: Page;
let a: Api;
let otherKey: string;
let app: Awaited<ReturnType<typeof startAppServer>>;
let mail: Loose;
let base: string;

const shot = (p: Page, name: string) => p.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
const run = (code: string, session: string) => ({
  code,
  description: 'Read a note and mail it to the team',
  sessionId: session,
  turnId: 'turn-1',
  callId: 'call-1',
  connections: [mail.id],
});
const MAIL = `
const note = await apps.mail.read_note({ id: 7 });
console.log("read note", note.structuredContent.echo.id);
console.warn("about to send");
const sent = await apps.mail.send_email({ to: "team@example.com", note: note.structuredContent.echo.id });
return { sent: sent.structuredContent.echo };`;

beforeAll(async () => {
  cluster = await startCluster({ runners: [{ modes: ['read-only'], concurrency: 2 }] });
  base = cluster.gatewayUrls[0]!;
  a = api(base, cluster.devKey);
  expect((await a('POST', '/v1/admin/tenants', { id: 'globex', name: 'Globex' })).status).toBe(201);
  otherKey = (
    await a('POST', '/v1/admin/tenants/globex/keys', { scopes: ['apps.use', 'sessions.read', 'decisions'] })
  ).body.key;
  app = await startAppServer(async (d) => {
    if (d.body.tool === 'slow') await sleep(1500);
    return {
      status: 200,
      body: JSON.stringify({ structuredContent: { tool: d.body.tool, echo: d.body.arguments } }),
    };
  });
  const tools = [
    { name: 'read_note', policy: 'allow', description: 'Reads a note' },
    { name: 'send_email', policy: 'ask', description: 'Sends an email' },
    { name: 'slow', policy: 'allow' },
  ];
  const created = await a('POST', '/v1/connections', { name: 'Mail', kind: 'http', url: app.url, tools });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  mail = created.body;
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await cluster?.stop();
});

describe('the console in Chromium', () => {
  it('serves the page under a strict CSP and signs in with a key kept in session storage only', async () => {
    const res = await page.goto(`${base}/console/`);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|https:|\*/);
    await shot(page, '01-sign-in');
    await page.getByLabel('API key').fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'unknown API key' }).waitFor();
    await signIn(page, base, cluster.devKey);
    // Expressions as text: this file is type-checked without the DOM library.
    const stored = await page.evaluate(
      "({ session: sessionStorage.getItem('islet.apiKey'), local: localStorage.length, cookie: document.cookie })",
    );
    expect(stored).toEqual({ session: cluster.devKey, local: 0, cookie: '' });
  });

  it('shows a run appear and complete live on the session page, then its details', async () => {
    await page.goto(`${base}/console/#/sessions/sess-live`);
    await page.getByText('Live: runs appear').waitFor();
    const submitted = await a('POST', '/v1/runs', {
      ...run('const n = await apps.mail.slow({ n: 1 });\nconsole.log("slept");\nreturn 6 * 7;', 'sess-live'),
      description: 'Multiply six by seven slowly',
    });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    const row = page.locator(`tr[data-run="${id}"]`);
    // The row arrives over the session stream while the run is still going, then turns Completed.
    await row.waitFor({ timeout: 15_000 });
    expect(await row.getAttribute('data-status')).not.toBe('Completed');
    await page.locator(`tr[data-run="${id}"][data-status="Completed"]`).waitFor({ timeout: 20_000 });
    await shot(page, '02-session');
    await row.getByRole('link', { name: 'Multiply six by seven slowly' }).click();
    await page.getByRole('heading', { name: 'Multiply six by seven slowly' }).waitFor();
    await page.locator('pre.result').waitFor();
    expect(await page.locator('pre.result').textContent()).toContain('42');
    expect(await page.locator('.code .tok-keyword').first().textContent()).toBe('const');
    await expect.poll(() => page.locator('tr[data-call="0"]').textContent()).toContain('mail.slow');
    // The call's row comes from the record, its arguments from the run's event stream: either may land first.
    await expect.poll(() => page.locator('tr[data-call="0"]').textContent()).toContain('"n": 1');
    expect(await page.locator('.logs').textContent()).toContain('slept');
    expect(await page.locator('.attempts').textContent()).toContain('attempt 1');
    await shot(page, '03-run');
    // 200 % zoom of a 1280 px window: 640 CSS px wide. Nothing may force a sideways scroll.
    await page.setViewportSize({ width: 640, height: 900 });
    expect(await page.evaluate('document.documentElement.scrollWidth <= innerWidth')).toBe(true);
    await shot(page, '03-run-at-200-percent');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('approves a waiting App call with the keyboard, and the run completes', async () => {
    const id = (await a('POST', '/v1/runs', run(MAIL, 'sess-decide'))).body.id as string;
    await page.goto(`${base}/console/#/runs/${id}`);
    const card = page.locator(`[data-decision="${id}:1"]`);
    await card.waitFor({ timeout: 20_000 });
    // The card comes with the stream; the App's display name follows once the tenant's connection
    // list has arrived (a fetch of its own, slower on a loaded machine).
    await expect.poll(() => card.textContent(), { timeout: 15_000 }).toContain('Mail · send_email');
    const text = await card.textContent();
    // The App's display name and the tool, then the connection id and tool as the API names them.
    expect(text).toContain(`${mail.id}/send_email`);
    expect(text).toContain('"to": "team@example.com"');
    await shot(page, '04-decision-waiting');
    // Keyboard only: Tab until "Allow once" has focus, then Enter.
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate('document.activeElement?.textContent')) === 'Allow once') break;
    }
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Allow once');
    await page.keyboard.press('Enter');
    await page.locator('.run-head .badge', { hasText: 'Completed' }).waitFor({ timeout: 20_000 });
    expect(await card.count()).toBe(0);
    expect(await page.locator('pre.result').textContent()).toContain('team@example.com');
    expect(await page.locator('tr[data-call="1"]').textContent()).toContain('allowed');
    expect(await page.locator('.attempts').textContent()).toContain('decision on call 1: allowed');
    await shot(page, '05-decision-allowed');
  });

  it('denies one from the decisions list on a phone, and the program sees AppCallDenied', async () => {
    const id = (await a('POST', '/v1/runs', run(MAIL, 'sess-deny'))).body.id as string;
    const phone = await browser.newPage({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    try {
      await signIn(phone, base, cluster.devKey);
      const card = phone.locator(`[data-decision="${id}:1"]`);
      for (let i = 0; i < 40 && (await card.count()) === 0; i++) {
        await phone.goto(`${base}/console/#/decisions`);
        await phone.getByRole('heading', { name: 'Waiting decisions' }).waitFor();
        await sleep(250);
      }
      await card.waitFor();
      expect(await phone.evaluate('document.documentElement.scrollWidth <= innerWidth')).toBe(true);
      await shot(phone, '06-decisions-phone');
      await card.getByRole('button', { name: 'Deny' }).tap();
      await card.waitFor({ state: 'detached' });
      await phone.goto(`${base}/console/#/runs/${id}`);
      await phone.locator('.run-head .badge', { hasText: 'Failed' }).waitFor({ timeout: 20_000 });
      expect(await phone.locator('tr[data-call="1"]').textContent()).toContain('AppCallDenied');
      await shot(phone, '07-run-denied-phone');
    } finally {
      await phone.close();
    }
  });

  it("shows another tenant's run as not found", async () => {
    const id = (await a('POST', '/v1/runs', run('return 1', 'sess-wall'))).body.id as string;
    const context = await browser.newContext();
    try {
      const other = await context.newPage();
      await signIn(other, base, otherKey);
      await other.goto(`${base}/console/#/runs/${id}`);
      await other
        .getByRole('alert')
        .filter({ hasText: `no code run ${id}` })
        .waitFor();
      await other.goto(`${base}/console/#/sessions/sess-wall`);
      await other.getByText('No runs in this session yet.').waitFor();
      await shot(other, '08-other-tenant');
    } finally {
      await context.close();
    }
  });

  it('opens the page a navigation chose between the first paint and the router listening', async () => {
    const context = await browser.newContext();
    try {
      // The moment the router starts listening, the hash has already moved (replaceState fires no
      // hashchange), as when a link is followed right after sign-in: the router must read it.
      await context.addInitScript(`{
        const listen = window.addEventListener;
        let moved = false;
        window.addEventListener = function (type, ...rest) {
          if (type === 'hashchange' && !moved) {
            moved = true;
            history.replaceState(null, '', '#/decisions');
          }
          return listen.call(this, type, ...rest);
        };
      }`);
      const p = await context.newPage();
      await signIn(p, base, cluster.devKey);
      await p.getByRole('heading', { name: 'Waiting decisions' }).waitFor({ timeout: 5000 });
      expect(await p.getByRole('heading', { name: 'Runs', exact: true }).count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('shows a settings version conflict and resolves it; lists connections with policies', async () => {
    await page.goto(`${base}/console/#/settings`);
    const timeout = page.getByLabel('Time budget (ms)');
    await timeout.waitFor();
    const before = (await a('GET', '/v1/platform/settings')).body;
    // Someone else saves meanwhile.
    expect(
      (
        await a('PATCH', '/v1/platform/settings', {
          expectedVersion: before.version,
          codeMode: { memoryMb: 256 },
        })
      ).status,
    ).toBe(200);
    await timeout.fill('90000');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(`Someone saved version ${before.version + 1} meanwhile`).waitFor();
    await shot(page, '09-settings-conflict');
    await page.getByRole('button', { name: `Apply my changes to version ${before.version + 1}` }).click();
    await page.getByText(`Saved as version ${before.version + 2}.`).waitFor();
    const after = (await a('GET', '/v1/platform/settings')).body;
    // Only the edited setting is applied: the other admin's memory change survives.
    expect(after.codeMode).toMatchObject({ timeoutMs: 90000, memoryMb: 256 });
    await page.goto(`${base}/console/#/connections`);
    const row = page.locator('tr', { hasText: 'send_email' });
    await row.waitFor();
    expect(await row.textContent()).toContain('ask');
    await shot(page, '10-connections');
  });

  it('opens the queue board for an admin only, and the API reference', async () => {
    expect((await fetch(`${base}/queues/api/queues`)).status).toBe(401);
    const otherBoard = await fetch(`${base}/console/board-session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${otherKey}` },
    });
    expect(otherBoard.status).toBe(403);
    await page.goto(`${base}/console/#/`);
    await page.getByRole('button', { name: 'Queues' }).click();
    await page.waitForURL(`${base}/queues/**`);
    await page.getByText('runs-read-only').first().waitFor({ timeout: 15_000 });
    await shot(page, '11-queues');
    await page.goto(`${base}/docs`);
    await page.locator('.swagger-ui .info').waitFor({ timeout: 15_000 });
    await page.getByText('/v1/runs').first().waitFor();
    // Try-it-out is authorized with the key the console signed in with (same tab's session storage).
    await page.locator('.btn.authorize.locked').waitFor();
    await shot(page, '12-api-reference');
  });
});
