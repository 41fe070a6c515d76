import { type Cluster, startCluster } from '@islet/devstack';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, sleep, startAppServer } from '../e2e/helpers.ts';
import { launchChromium, shots, signIn } from './browser-kit.ts';

let cluster: Cluster;
let browser: Browser;
let page: Page;
let a: Api;
let base: string;
let app: Awaited<ReturnType<typeof startAppServer>>;
let mail: Loose;
/** The App's `slow` tool answers only once the gate is open (`hold` closes it, `release` opens it). */
let gateOpen = false;
const waiters: Array<() => void> = [];
const hold = () => {
  gateOpen = false;
};
const release = () => {
  gateOpen = true;
  for (const w of waiters.splice(0)) w();
};

/** Submits a run_code run and waits for its end (polled: a loaded machine may outlast a Prefer wait). */
async function runToEnd(code: string, description: string, session = 'sess-ops') {
  const res = await a('POST', '/v1/runs', {
    code,
    description,
    sessionId: session,
    turnId: 't',
    callId: 'c',
  });
  expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(202);
  const id = res.body.id as string;
  // Polled on the run list (summaries): a run of ~64 MiB has a record of as much, read once, by the page.
  for (;;) {
    const r = await a('GET', `/v1/runs?sessionId=${encodeURIComponent(session)}&limit=200`);
    const item = (r.body.items as Loose[]).find((x) => x.id === id);
    if (item?.endedAt) return { id, status: item.status as string };
    await sleep(1000);
  }
}

beforeAll(async () => {
  // Room for a run's ~64 MiB of output (kept in its record) beside the queues.
  cluster = await startCluster({
    runners: [{ modes: ['read-only'], concurrency: 2 }],
    redisMaxMemoryBytes: 2 * 1024 * 1024 * 1024,
  });
  base = cluster.gatewayUrls[0]!;
  a = api(base, cluster.devKey);
  app = await startAppServer(async (d) => {
    if (d.body.tool === 'slow' && !gateOpen) await new Promise<void>((r) => waiters.push(r));
    return {
      status: 200,
      body: JSON.stringify({ structuredContent: { tool: d.body.tool, echo: d.body.arguments } }),
    };
  });
  const created = await a('POST', '/v1/connections', {
    name: 'Mail',
    kind: 'http',
    url: app.url,
    tools: [
      { name: 'send_email', policy: 'ask', description: 'Sends an email' },
      { name: 'slow', policy: 'allow', description: 'Answers when the test says so' },
    ],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  mail = created.body;
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await signIn(page, base, cluster.devKey);
}, 90_000);

afterAll(async () => {
  release();
  await browser?.close();
  await app?.close();
  await cluster?.stop();
});

const submit = async (code: string, description: string, session = 'sess-live') => {
  const res = await a('POST', '/v1/runs', {
    code,
    description,
    sessionId: session,
    turnId: 't',
    callId: 'c',
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.id as string;
};
const statusOf = async (id: string) => (await a('GET', `/v1/code-runs/${id}`)).body.status as string;

describe('live pages', () => {
  it('the runs table shows a run submitted by the API with no click, then its end', async () => {
    hold();
    await page.goto(`${base}/console/#/`);
    await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
    await page.getByText(/^Live:/).waitFor();
    const id = await submit(
      'await apps.mail.slow({});\nreturn "done";',
      'Wait for the slow App, live in the table',
    );
    const row = page.locator(`tr[data-run="${id}"]`);
    await row.waitFor({ timeout: 20_000 });
    expect(await row.textContent()).toContain('Wait for the slow App, live in the table');
    expect(await row.textContent()).toContain('sess-live');
    expect(await row.getAttribute('data-status')).not.toBe('Completed');
    await shots(page, 'runs');
    release();
    await page.locator(`tr[data-run="${id}"][data-status="Completed"]`).waitFor({ timeout: 30_000 });
    // The filters ask the API again: a status the run does not have hides it.
    await page.getByRole('checkbox', { name: 'Failed' }).check();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await row.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Clear' }).click();
    await row.waitFor();
  });

  it('a run whose events arrive while the table is still being read appears in it', async () => {
    // The table's first read is answered before the run exists and handed to the page only after
    // the run's events (created, Running) have reached the tabs: the page must not drop them.
    hold();
    const late = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    let answer = () => {};
    const answered = new Promise<void>((r) => {
      answer = r;
    });
    let read = 0;
    try {
      await late.route(/\/v1\/runs\?/, async (route) => {
        const response = await route.fetch();
        read += 1;
        await answered;
        await route.fulfill({ response });
      });
      await signIn(late, base, cluster.devKey);
      await late.getByText(/^Live:/).waitFor();
      await expect.poll(() => read).toBeGreaterThan(0);
      const id = await submit('await apps.mail.slow({});\nreturn "late";', 'Created while the table is read');
      await expect.poll(() => statusOf(id), { timeout: 20_000 }).toBe('Running');
      // Another tab shows it: the stream has sent its events.
      await page.goto(`${base}/console/#/`);
      await page.locator(`tr[data-run="${id}"]`).waitFor({ timeout: 20_000 });
      answer();
      const row = late.locator(`tr[data-run="${id}"]`);
      await row.waitFor({ timeout: 20_000 });
      expect(await row.textContent()).toContain('Created while the table is read');
      release();
      await late.locator(`tr[data-run="${id}"][data-status="Completed"]`).waitFor({ timeout: 30_000 });
    } finally {
      answer();
      release();
      await late.close();
    }
  });

  it('the inbox shows a decision with no click, in every tab; Allow in the browser completes the run', async () => {
    const other = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await signIn(other, base, cluster.devKey);
      await other.goto(`${base}/console/#/decisions`);
      await page.goto(`${base}/console/#/decisions`);
      await page.getByRole('heading', { name: /^Waiting decisions/ }).waitFor();
      const id = await submit(
        'const note = "weekly";\nconst sent = await apps.mail.send_email({ to: "team@example.com", note });\nreturn sent.structuredContent.echo;',
        'Mail the weekly note to the team',
      );
      const card = page.locator(`[data-decision="${id}:0"]`);
      await card.waitFor({ timeout: 20_000 });
      await other.locator(`[data-decision="${id}:0"]`).waitFor({ timeout: 20_000 });
      await card.locator('.run-description', { hasText: 'Mail the weekly note to the team' }).waitFor();
      const text = (await card.textContent()) ?? '';
      expect(text).toContain('Mail · send_email');
      expect(text).toContain('"to": "team@example.com"');
      expect(await card.locator('pre.excerpt .here').textContent()).toContain('apps.mail.send_email(');
      // The deadline is the run's budget end (run_code holds in place: its 120 s keep running).
      const run = (await a('GET', `/v1/code-runs/${id}`)).body;
      const deadline = Number(await card.locator('[data-deadline]').getAttribute('data-deadline'));
      expect(deadline).toBe(run.createdAt + run.limits.timeoutMs);
      expect(await card.locator('.deadline').textContent()).toMatch(/(min \d+ s|\d+ s) left/);
      expect(Number(await page.locator('nav .count').getAttribute('data-count'))).toBeGreaterThanOrEqual(1);
      await shots(page, 'decisions');
      await card.getByRole('button', { name: 'Allow once' }).click();
      await card.waitFor({ state: 'detached' });
      // Answered here: gone from the other tab too, with no click there.
      await other.locator(`[data-decision="${id}:0"]`).waitFor({ state: 'detached', timeout: 20_000 });
      await expect.poll(() => statusOf(id), { timeout: 30_000 }).toBe('Completed');
    } finally {
      await other.close();
    }
  });

  it('Deny with a reason: the program receives the reason in its AppCallDenied error', async () => {
    await page.goto(`${base}/console/#/decisions`);
    const id = await submit(
      'try {\n  await apps.mail.send_email({ to: "all@example.com" });\n  return "sent";\n} catch (e) {\n  return String(e.message);\n}',
      'Mail everyone',
    );
    const card = page.locator(`[data-decision="${id}:0"]`);
    await card.waitFor({ timeout: 20_000 });
    await card.getByLabel('Reason (the program sees it)').fill('not to everyone, please');
    await card.getByRole('button', { name: 'Deny' }).click();
    await card.waitFor({ state: 'detached' });
    await expect.poll(() => statusOf(id), { timeout: 30_000 }).toBe('Completed');
    const record = (await a('GET', `/v1/code-runs/${id}`)).body;
    expect(JSON.stringify(record.result)).toContain(
      'a decider did not allow the call: not to everyone, please',
    );
    // A reason is only for a denial.
    const refused = await a('POST', `/v1/code-runs/${id}/decisions`, { index: 0, allow: true, reason: 'x' });
    expect(refused.status).toBe(400);
  });

  it('the run page shows log lines while the run runs', async () => {
    hold();
    const id = await submit(
      'console.log("before the slow call");\nconsole.warn("still waiting");\nawait apps.mail.slow({});\nconsole.log("after the slow call");\nreturn 1;',
      'Print, wait, print',
    );
    await page.goto(`${base}/console/#/runs/${id}`);
    await page.locator('.logs li', { hasText: 'before the slow call' }).waitFor({ timeout: 30_000 });
    // Seen before the end: the run still waits on the App.
    expect(await statusOf(id)).toBe('Running');
    expect(await page.locator('.logs li', { hasText: 'after the slow call' }).count()).toBe(0);
    await page.locator('.live-dot').waitFor();
    await shots(page, 'run-live');
    release();
    await page.locator('.logs li', { hasText: 'after the slow call' }).waitFor({ timeout: 30_000 });
    await page.locator('.run-head .badge', { hasText: 'Completed' }).waitFor({ timeout: 30_000 });
  });

  it('renders tenant text as text: a hostile description, log line and result run nothing', async () => {
    const evil = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
    const id = await submit(`console.log(${JSON.stringify(evil)});\nreturn ${JSON.stringify(evil)};`, evil);
    await expect.poll(() => statusOf(id), { timeout: 30_000 }).toBe('Completed');
    await page.goto(`${base}/console/#/`);
    await page.locator(`tr[data-run="${id}"]`, { hasText: evil }).waitFor({ timeout: 20_000 });
    await page.goto(`${base}/console/#/runs/${id}`);
    await page.getByRole('heading', { name: evil }).waitFor();
    await page.locator('.logs li', { hasText: evil }).waitFor();
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate('window.__xss')).toBeUndefined();
  });

  it('revokes a key from the keys page, and the API refuses it at once', async () => {
    const made = await a('POST', `/v1/admin/tenants/${cluster.tenantId}/keys`, {
      scopes: ['apps.use'],
      principal: 'revoke-me',
    });
    expect(made.status).toBe(201);
    const secret = made.body.key as string;
    expect((await api(base, secret)('GET', '/v1/connections')).status).toBe(200);
    await page.goto(`${base}/console/#/keys`);
    const row = page.locator('tr', { hasText: 'revoke-me' });
    await row.waitFor();
    expect(await row.textContent()).not.toContain(secret);
    await shots(page, 'keys');
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await api(base, secret)('GET', '/v1/connections')).status).toBe(401);
  });

  it('edits a tool policy in place on the connections page', async () => {
    await page.goto(`${base}/console/#/connections`);
    const select = page.getByLabel('Policy of slow');
    await select.waitFor();
    await select.selectOption('deny');
    await page.getByRole('status').filter({ hasText: 'slow: deny.' }).waitFor();
    const c = (await a('GET', `/v1/connections/${mail.id}`)).body;
    expect(c.tools.find((t: Loose) => t.name === 'slow').policy).toBe('deny');
    await shots(page, 'connections');
    await select.selectOption('allow');
    await page.getByRole('status').filter({ hasText: 'slow: allow.' }).waitFor();
  });
});

describe('every page at 1280 and 390 px', () => {
  it('saves the pages not saved above, each readable on a phone without a sideways scroll', async () => {
    const id = await submit(
      'console.log("hello");\nreturn { answer: 42 };',
      'Return the answer',
      'sess-shots',
    );
    await expect.poll(() => statusOf(id), { timeout: 30_000 }).toBe('Completed');
    const pages: Array<[string, string, string]> = [
      ['sessions', '#/sessions', 'Sessions'],
      ['session', '#/sessions/sess-shots', 'Session sess-shots'],
      ['run', `#/runs/${id}`, 'Return the answer'],
      ['settings', '#/settings', 'Platform settings'],
      ['usage', '#/usage', 'Usage'],
    ];
    for (const [name, hash, heading] of pages) {
      await page.goto(`${base}/console/${hash}`);
      await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
      if (name === 'run') await page.locator('.logs li', { hasText: 'hello' }).waitFor();
      await sleep(300);
      await shots(page, name);
    }
  });
});

describe('the run page under a hostile program', () => {
  it('highlights only a bounded prefix of a 600 KB program with unclosed comments', async () => {
    const attack = `return 1;\n/*${'x/*'.repeat(200_000)}`;
    const run = await runToEnd(attack, 'An unclosed comment, 600 KB', 'sess-attack');
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
