/**
 * The web site in a real browser: Debian's Chromium driven by playwright-core against the real
 * service (`nonsense serve` on a free port), clicking through every flow with and without JavaScript.
 * Skipped, with a warning, where /usr/bin/chromium is missing; under CI that fails the run (CI installs it).
 *
 * Two servers: the main one has the demo data; a small one holds only a hostile entry, so that `/`
 * shows it for sure, and a report limit of 1 so that the dialog meets a 429.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/*.png.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_DIR } from '../../src/demo/load-demo.ts';
import { tempDir } from '../helper.ts';
import { runCommand, startService } from '../process-helper.ts';
import { skipWithout } from '../requirements.ts';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');

const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : null;
const HOSTILE = '<script>alert(1)</script> "quotes" & ampersands';
const TOAST_ENTRY = '71f66936-415e-4a9a-9464-c6fbc6d354c0';

// The few browser globals the in-page callbacks use: the project's TypeScript has no DOM library, and
// adding it would change the types of the whole (Node) code base.
declare const document: { fonts: { ready: Promise<unknown> }; querySelector(selector: string): { getAttribute(name: string): string | null } | null };
declare const window: Record<string, unknown>;
declare const navigator: { clipboard: { readText(): Promise<string> } };
declare const sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
type Img = { naturalWidth: number };

interface Service {
  url: string;
  token: string;
  child: ChildProcess;
  output: () => string;
  admin(method: string, path: string, body?: unknown): Promise<Response>;
}

/** startSite runs `nonsense serve` on a new database and creates an admin token with the command line. */
async function startSite(dir: string, name: string, env: Record<string, string>): Promise<Service> {
  const serviceEnv = { DATABASE_URL: path.join(dir, `${name}.db`), DEMO_DATA: 'auto', ...env };
  const service = await startService(serviceEnv);
  const created = await runCommand(['token', 'create', 'admin'], serviceEnv);
  const token = created.stdout.trim().split('\n').at(-1)!;
  const url = service.base;
  const admin = (method: string, apiPath: string, body?: unknown) =>
    fetch(`${url}/api/v1/admin${apiPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { url, token, child: service.child, output: service.output, admin };
}

describe.skipIf(SKIP)('the web site in Chromium', () => {
  let dir: string;
  let main: Service;
  let small: Service;
  let browser: Browser;
  let hostileUuid: string;
  // Console errors and page errors of every page; expected failed requests (401, 429) are allowed.
  const problems: string[] = [];
  const contexts: BrowserContext[] = [];

  /** newPage opens a page in a new context; `expected` are the error statuses its requests may meet. */
  async function newPage(options: BrowserContextOptions = {}, expected = '401|409|429'): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...options });
    contexts.push(context);
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (new RegExp(`Failed to load resource: the server responded with a status of (${expected})`).test(message.text())) return;
      problems.push(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
    // An entry's text must never run: any alert() is a failure.
    page.on('dialog', (dialog) => {
      // confirm() before a deletion is answered by the test (acceptNextConfirm).
      if (dialog.type() === 'confirm') return;
      problems.push(`${page.url()}: a ${dialog.type()} dialog opened: ${dialog.message()}`);
      void dialog.dismiss();
    });
    return page;
  }

  async function screenshot(page: Page, name: string) {
    if (SCREENSHOTS === null) return;
    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
  }

  beforeAll(async () => {
    dir = tempDir();
    const { chromium } = await import('playwright-core');
    [main, small, browser] = await Promise.all([
      startSite(dir, 'main', { RATE_LIMIT_REPORT: '10/10m' }),
      startSite(dir, 'small', { DEMO_DATA: 'off', RATE_LIMIT_REPORT: '1/10m' }),
      chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
      }),
    ]);
    const created = await small.admin('POST', '/nonsense', { text: HOSTILE });
    expect(created.status).toBe(201);
    hostileUuid = ((await created.json()) as { uuid: string }).uuid;
  }, 60_000);

  // Each test's pages close with it: pages left open keep polling (the admin queue) and holding
  // connections, and every page here comes from one address, which the service limits.
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close().catch(() => {});
  });

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await browser?.close();
    for (const service of [main, small]) service?.child.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('shows a hostile entry as literal text on /, with and without JavaScript, and reports it until the limit', async () => {
    const page = await newPage();
    await page.goto(`${small.url}/`);
    await expect.poll(() => page.locator('.entry-text').textContent()).toBe(HOSTILE);
    // "Another one" renders from the JSON API in the page: the same text, as text.
    await page.evaluate(() => (window.stayed = true));
    await page.getByRole('link', { name: 'Another one' }).click();
    // The text is the same before and after (one entry); the swap is done when the stage is no longer
    // busy, and only then is focus back on "Another one", not taken from the Report link below.
    await expect.poll(() => page.locator('#stage[aria-busy]').count(), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => page.locator('.entry-text').textContent()).toBe(HOSTILE);
    expect(await page.evaluate(() => window.stayed)).toBe(true);
    await expect.poll(() => page.locator('.entry-text script').count()).toBe(0);

    // The report dialog, by keyboard: open it, choose a reason, send.
    await page.getByRole('link', { name: 'Report' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Report this entry' });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await expect.poll(() => dialog.locator('.report-preview').textContent()).toBe(HOSTILE);
    await dialog.getByLabel('Same or near-identical entry already exists').check();
    await dialog.getByLabel(/Details/).fill('Seen it twice.');
    await dialog.getByRole('button', { name: 'Send report' }).click();
    await expect.poll(() => dialog.locator('#report-message').textContent()).toMatch(/Thank you/);
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.isVisible()).toBe(false);
    // The limit is 1 report per 10 minutes: the second shows the service's explanation.
    await page.getByRole('link', { name: 'Report' }).click();
    await dialog.getByLabel('Other violation (please add details)').check();
    await dialog.getByRole('button', { name: 'Send report' }).click();
    await expect.poll(() => dialog.locator('#report-message').textContent()).toMatch(/^Not sent: Too many requests from your address: at most 1 per 10 minutes/);
    expect(await dialog.locator('#report-message').getAttribute('class')).toContain('is-error');
    await page.getByRole('button', { name: 'Cancel' }).click();

    const plain = await newPage({ javaScriptEnabled: false });
    await plain.goto(`${small.url}/`);
    await expect.poll(() => plain.locator('.entry-text').textContent()).toBe(HOSTILE);
    expect(await plain.locator('[data-action=copy-link]').isVisible()).toBe(false);
    await plain.goto(`${small.url}/nonsense/${hostileUuid}`);
    await expect.poll(() => plain.locator('blockquote').textContent()).toBe(HOSTILE);
  });

  it('random: "Another one" swaps the entry in place with JavaScript and reloads without', async () => {
    const page = await newPage();
    await page.goto(`${main.url}/`);
    const first = await page.locator('article.entry').getAttribute('data-uuid');
    await page.evaluate(() => (window.stayed = true));
    for (let i = 0; i < 5 && (await page.locator('article.entry').getAttribute('data-uuid')) === first; i++) {
      await page.getByRole('link', { name: 'Another one' }).click();
      await page.waitForFunction((uuid) => document.querySelector('article.entry')?.getAttribute('data-uuid') !== uuid, first, { timeout: 2000 }).catch(() => {});
    }
    const second = (await page.locator('article.entry').getAttribute('data-uuid'))!;
    expect(second).not.toBe(first);
    expect(await page.evaluate(() => window.stayed)).toBe(true);
    // Links follow the new entry.
    expect(await page.getByRole('link', { name: 'Share page' }).getAttribute('href')).toBe(`/nonsense/${second}`);
    expect(await page.getByRole('link', { name: 'Download PNG' }).getAttribute('href')).toBe(`/api/v1/nonsense/${second}.png`);
    // Custom emojis become images, client-side variables neutral words, like the server renders them.
    await page.route('**/api/v1/nonsense/random', async (route) => {
      const entry = (await (await fetch(`${main.url}/api/v1/nonsense/${TOAST_ENTRY}`)).json()) as { nonsense: string };
      await route.fulfill({ json: { ...entry, nonsense: `$AUTHOR$ says: ${entry.nonsense} :unknown_one:` } });
    });
    await page.getByRole('link', { name: 'Another one' }).click();
    await expect.poll(() => page.locator('article.entry').getAttribute('data-uuid')).toBe(TOAST_ENTRY);
    await expect.poll(() => page.locator('.entry-text').textContent()).toBe('someone says: Emotional support  reporting for duty. :unknown_one:');
    const emoji = page.locator('.entry-text img.emoji');
    expect(await emoji.getAttribute('alt')).toBe(':toast:');
    await expect.poll(() => emoji.evaluate((img: Img) => img.naturalWidth)).toBe(128);
    await page.unroute('**/api/v1/nonsense/random');

    const plain = await newPage({ javaScriptEnabled: false });
    await plain.goto(`${main.url}/`);
    const before = await plain.locator('article.entry').getAttribute('data-uuid');
    let after = before;
    for (let i = 0; i < 5 && after === before; i++) {
      await Promise.all([plain.waitForNavigation(), plain.getByRole('link', { name: 'Another one' }).click()]);
      after = await plain.locator('article.entry').getAttribute('data-uuid');
    }
    expect(after).not.toBe(before);
    expect(new URL(plain.url()).pathname).toBe('/');
  });

  it('search: term, date range, pages forward and back, and the share page of a result', async () => {
    const page = await newPage();
    await page.goto(`${main.url}/search`);
    await page.getByLabel('Text contains').fill('the');
    await page.getByLabel('Added from').fill('2021-01-01');
    await page.getByLabel('Added until').fill('2024-12-31');
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Search' }).click()]);
    const heading = page.locator('#results-title');
    expect(await heading.textContent()).toMatch(/^1–20 of (\d+) entries matching$/);
    const total = Number(/of (\d+)/.exec((await heading.textContent())!)![1]);
    expect(total).toBeGreaterThan(40);
    const url = new URL(page.url());
    expect(Object.fromEntries(url.searchParams)).toEqual({ q: 'the', from: '2021-01-01', to: '2024-12-31' });
    for (const time of await page.locator('.result-list time').evaluateAll((times) => times.map((t) => t.getAttribute('datetime')!))) {
      expect(time >= '2021-01-01' && time < '2025-01-01').toBe(true);
    }
    expect(await page.locator('.result-list mark').count()).toBeGreaterThan(0);
    const firstPage = await page.locator('article.entry').evaluateAll((all) => all.map((a) => a.getAttribute('data-uuid')));
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Next →' }).click()]);
    expect(await heading.textContent()).toBe(`21–40 of ${total} entries matching`);
    await screenshot(page, 'search-desktop-light');
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: '← Previous' }).click()]);
    expect(await page.locator('article.entry').evaluateAll((all) => all.map((a) => a.getAttribute('data-uuid')))).toEqual(firstPage);
    const uuid = firstPage[0]!;
    await Promise.all([page.waitForNavigation(), page.locator('article.entry').first().getByRole('link', { name: 'Share page' }).click()]);
    expect(new URL(page.url()).pathname).toBe(`/nonsense/${uuid}`);
    expect(await page.locator('meta[property="og:image"]').getAttribute('content')).toBe(`${main.url}/api/v1/nonsense/${uuid}.png`);
  });

  it('share: copy link and text to the clipboard (by keyboard too) and download the PNG', async () => {
    const page = await newPage({ permissions: ['clipboard-read', 'clipboard-write'], acceptDownloads: true });
    await page.goto(`${main.url}/search?q=emotional+support`);
    const entry = page.locator('article.entry').first();
    expect(await entry.getAttribute('data-uuid')).toBe(TOAST_ENTRY);
    const copyLink = entry.locator('[data-action=copy-link]');
    await copyLink.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => copyLink.textContent()).toBe('Link copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`${main.url}/nonsense/${TOAST_ENTRY}`);
    await entry.getByRole('button', { name: 'Copy text' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe('Emotional support :toast: reporting for duty.');
    const [download] = await Promise.all([page.waitForEvent('download'), entry.getByRole('link', { name: 'Download PNG' }).click()]);
    expect(download.suggestedFilename()).toBe(`nonsense-${TOAST_ENTRY}.png`);
    const file = await download.path();
    expect(fs.readFileSync(file).subarray(1, 4).toString()).toBe('PNG');
  });

  it('report without JavaScript: the plain form files the report and confirms it', async () => {
    const plain = await newPage({ javaScriptEnabled: false });
    await plain.goto(`${main.url}/search?q=socks+do+not+disappear`);
    await Promise.all([plain.waitForNavigation(), plain.getByRole('link', { name: 'Report' }).click()]);
    expect(new URL(plain.url()).pathname).toBe('/nonsense/8acee36d-429e-4d93-bea6-f7924f1e6ba5/report');
    await plain.getByLabel('Graphic violence').check();
    await plain.getByLabel(/Details/).fill('The socks graduated violently.');
    await Promise.all([plain.waitForNavigation(), plain.getByRole('button', { name: 'Send report' }).click()]);
    expect(await plain.getByRole('status').textContent()).toMatch(/Your report was sent/);
  });

  it('admin: sign in, resolve reports, find, edit, hide, show and add entries, variables, emojis and the log', async () => {
    // A second open report for the moderators, from the JavaScript dialog.
    const reader = await newPage();
    await reader.goto(`${main.url}/search?q=emotional+support`);
    await reader.getByRole('link', { name: 'Report' }).click();
    await reader.getByLabel('Explicit sexual content').check();
    await reader.getByRole('button', { name: 'Send report' }).click();
    await expect.poll(() => reader.locator('#report-message').textContent()).toMatch(/Thank you/);

    const page = await newPage();
    await page.goto(`${main.url}/admin`);
    await page.getByLabel('Admin token').fill('nst_not-a-real-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#signin-message').textContent()).toMatch(/^Not signed in: The token is not valid/);
    await page.getByLabel('Admin token').fill(main.token);
    await page.keyboard.press('Enter');
    const reports = page.locator('#report-list > li.card');
    await expect.poll(() => reports.count()).toBe(2);
    expect(await page.evaluate(() => sessionStorage.getItem('nonsense-admin-token'))).toBe(main.token);
    await expect.poll(() => page.locator('[data-count=reports]').textContent()).toBe('2');
    await screenshot(page, 'admin-desktop-light');

    // Accept the report on the socks entry (it becomes hidden), dismiss the other.
    const socks = reports.filter({ hasText: 'socks do not disappear' });
    await expect.poll(() => socks.locator('.card-details').textContent()).toBe('Details: The socks graduated violently.');
    await socks.getByRole('button', { name: 'Accept and hide entry' }).click();
    await expect.poll(() => page.locator('#console-message').textContent()).toBe('Report accepted: the entry is hidden.');
    expect((await fetch(`${main.url}/api/v1/nonsense/8acee36d-429e-4d93-bea6-f7924f1e6ba5`)).status).toBe(404);
    await expect.poll(() => reports.count()).toBe(1);
    await reports.first().getByRole('button', { name: 'Dismiss' }).click();
    await expect.poll(() => page.locator('#report-list').textContent()).toBe('No open reports. Nothing to do.');
    await page.getByLabel('Show').selectOption('accepted');
    await expect.poll(() => reports.count()).toBe(1);
    expect(await reports.first().textContent()).toMatch(/Accepted by admin/);

    // Entries: add the hostile text, find it, edit, hide and show it.
    await page.getByRole('link', { name: 'Entries' }).click();
    await page.locator('#entry-text').fill(HOSTILE);
    await page.getByRole('button', { name: 'Add entry' }).click();
    await expect.poll(() => page.locator('#console-message').textContent()).toBe('Entry added. It is visible now.');
    await page.locator('#entry-text').fill(HOSTILE);
    await page.getByRole('button', { name: 'Add entry' }).click();
    await expect.poll(() => page.locator('#console-message').textContent()).toMatch(/^The entry was not added: The same text already exists as entry /);
    await page.getByLabel('Text contains').fill('ampersands');
    await page.getByRole('button', { name: 'Search' }).click();
    const found = page.locator('#entry-list > li.card');
    await expect.poll(() => found.count()).toBe(1);
    await expect.poll(() => found.locator('.entry-text').textContent()).toBe(HOSTILE);
    const added = (await found.getAttribute('data-uuid'))!;
    for (const url of [`/search?q=ampersands`, `/nonsense/${added}`]) {
      const view = await newPage();
      await view.goto(`${main.url}${url}`);
      await expect.poll(() => view.locator('blockquote').first().textContent()).toBe(HOSTILE);
    }
    await found.getByRole('button', { name: 'Edit' }).click();
    await found.getByLabel('Text').fill(`${HOSTILE} (edited)`);
    await found.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => found.locator('.entry-text').textContent()).toBe(`${HOSTILE} (edited)`);
    await found.getByRole('button', { name: 'Hide' }).click();
    await expect.poll(() => found.locator('.tag').first().textContent()).toBe('Hidden');
    expect((await fetch(`${main.url}/api/v1/nonsense/${added}`)).status).toBe(404);
    await page.getByLabel('State', { exact: true }).selectOption('hidden');
    await page.getByLabel('Text contains').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => found.count()).toBe(2);
    await found.filter({ hasText: '(edited)' }).getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => found.filter({ hasText: '(edited)' }).locator('.tag').first().textContent()).toBe('Visible');
    expect((await fetch(`${main.url}/api/v1/nonsense/${added}`)).status).toBe(200);

    // Variables: add, change, delete.
    await page.getByRole('link', { name: 'Variables' }).click();
    await page.locator('#variable-name').fill('$COLOUR$');
    await page.getByLabel('Description').fill('A colour.');
    await page.getByLabel('Values, one a line').fill('teal\nochre\n');
    await page.getByRole('button', { name: 'Save variable' }).click();
    await expect.poll(() => page.locator('#console-message').textContent()).toBe('$COLOUR$ added.');
    const colour = page.locator('#variable-list > li').filter({ hasText: '$COLOUR$' });
    // The message shows as soon as the write succeeds; the list is re-read after it.
    await expect.poll(() => colour.locator('.values').textContent()).toBe('2 values: teal · ochre');
    await colour.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Values, one a line').fill('teal\nochre\nmauve');
    await page.getByRole('button', { name: 'Save variable' }).click();
    await expect.poll(() => colour.locator('.values').textContent()).toBe('3 values: teal · ochre · mauve');
    expect(((await (await fetch(`${main.url}/api/v1/variables`)).json()) as { name: string }[]).some((v) => v.name === '$COLOUR$')).toBe(true);
    await acceptNextConfirm(page, () => colour.getByRole('button', { name: 'Delete' }).click());
    await expect.poll(() => page.locator('#console-message').textContent()).toBe('$COLOUR$ deleted.');
    await expect.poll(() => colour.count()).toBe(0);

    // Emojis: upload a PNG, see it, delete it.
    await page.getByRole('link', { name: 'Emojis' }).click();
    await page.locator('#emoji-name').fill('test_duck');
    await page.getByLabel('Image').setInputFiles(path.join(DEMO_DIR, 'emojis', 'rubberduck.png'));
    await page.getByRole('button', { name: 'Upload' }).click();
    await expect.poll(() => page.locator('#console-message').textContent()).toBe(':test_duck: added.');
    const duck = page.locator('#emoji-list > li').filter({ hasText: ':test_duck:' });
    await expect.poll(() => duck.locator('img').evaluate((img: Img) => img.naturalWidth)).toBeGreaterThan(0);
    expect((await fetch(`${main.url}/api/v1/emojis/test_duck.png`)).status).toBe(200);
    await acceptNextConfirm(page, () => duck.getByRole('button', { name: 'Delete' }).click());
    await expect.poll(() => page.locator('#console-message').textContent()).toBe(':test_duck: deleted.');
    expect((await fetch(`${main.url}/api/v1/emojis/test_duck.png`)).status).toBe(404);

    // The log has every change, newest first, the hostile text as text.
    await page.getByRole('link', { name: 'Log' }).click();
    const actions = page.locator('#log-rows tr td:nth-child(3)');
    await expect.poll(() => actions.count()).toBeGreaterThan(8);
    expect(await actions.allTextContents()).toEqual([
      'emoji.delete',
      'emoji.put',
      'variable.delete',
      'variable.put',
      'variable.put',
      'entry.show',
      'entry.hide',
      'entry.edit',
      'entry.create',
      'report.dismiss',
      'report.accept',
    ]);
    expect(await page.locator('#log-rows').textContent()).toContain(JSON.stringify({ text: HOSTILE }));

    // Signing out forgets the token.
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.evaluate(() => sessionStorage.getItem('nonsense-admin-token'))).toBeNull();
    expect(await page.locator('#signin').isVisible()).toBe(true);
    // A whole moderator's session, close to ninety steps in the browser: 11 s alone, past 20 s beside the rest of CI.
  }, 60_000);

  it('errors: a hidden entry\'s share link, an unknown page and a 429 show the site\'s page with their status; the API keeps problem+json', async () => {
    const page = await newPage({}, '404|429');
    // The socks entry was hidden by accepting its report (admin test): its share link is dead now.
    const dead = await page.goto(`${main.url}/nonsense/8acee36d-429e-4d93-bea6-f7924f1e6ba5`);
    expect(dead!.status()).toBe(404);
    expect(dead!.headers()['content-type']).toBe('text/html; charset=utf-8');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Nothing here');
    expect(await page.locator('.error-detail').textContent()).toBe('No entry has the UUID 8acee36d-429e-4d93-bea6-f7924f1e6ba5.');
    // Styled by the site: its stylesheet and font apply, and the header leads home.
    await expect.poll(() => page.evaluate("getComputedStyle(document.body).fontFamily")).toMatch(/^"Noto Sans"/);
    expect(await page.evaluate("getComputedStyle(document.querySelector('.error-page')).textAlign")).toBe('center');
    await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Read a random entry' }).click()]);
    await expect.poll(() => page.locator('article.entry').count()).toBe(1);

    const unknown = await page.goto(`${main.url}/no/such/page`);
    expect(unknown!.status()).toBe(404);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Nothing here');

    // The API answers the same browser in problem+json.
    const api = await page.goto(`${main.url}/api/v1/nonsense/8acee36d-429e-4d93-bea6-f7924f1e6ba5`);
    expect(api!.status()).toBe(404);
    expect(api!.headers()['content-type']).toBe('application/problem+json; charset=utf-8');

    // The plain report form on the small service, whose one report per 10 minutes is spent: a 429 page.
    const plain = await newPage({ javaScriptEnabled: false }, '429');
    await plain.goto(`${small.url}/nonsense/${hostileUuid}/report`);
    await plain.getByLabel('Graphic violence').check();
    const [limited] = await Promise.all([plain.waitForNavigation(), plain.getByRole('button', { name: 'Send report' }).click()]);
    expect(limited!.status()).toBe(429);
    expect(Number(limited!.headers()['retry-after'])).toBeGreaterThan(0);
    await expect.poll(() => plain.getByRole('heading', { level: 1 }).textContent()).toBe('Too many requests');
    expect(await plain.locator('.error-detail').textContent()).toMatch(/^Too many requests from your address: at most 1 per 10 minutes; try again in \d+ s\.$/);
  });

  it('favicon: the pages\' SVG icon and /favicon.ico both load', async () => {
    const page = await newPage();
    await page.goto(`${main.url}/search`);
    const href = await page.locator('link[rel=icon]').getAttribute('href');
    const svg = await page.request.get(`${main.url}${href}`);
    expect(svg.status()).toBe(200);
    expect(svg.headers()['content-type']).toBe('image/svg+xml');
    const ico = await page.goto(`${main.url}/favicon.ico`);
    expect(ico!.status()).toBe(200);
    expect(ico!.headers()['content-type']).toBe('image/x-icon');
  });

  it('share page: uses the site\'s Noto Sans, loaded under its CSP', async () => {
    const page = await newPage();
    const fonts: string[] = [];
    page.on('response', (response) => {
      if (/\/static\/noto-sans-\d+\.ttf/.test(response.url())) fonts.push(`${new URL(response.url()).pathname} ${response.status()}`);
    });
    await page.goto(`${main.url}/nonsense/6cc93647-30cd-4d41-8e6f-fe77193fe4fa`);
    await page.evaluate(() => document.fonts.ready);
    await expect
      .poll(() => page.evaluate("[...document.fonts].filter((f) => f.family.replaceAll('\"', '') === 'Noto Sans').map((f) => f.weight + ' ' + f.status).sort()"))
      .toEqual(['400 loaded', '600 loaded']);
    expect(await page.evaluate("getComputedStyle(document.querySelector('blockquote')).fontFamily")).toMatch(/^"Noto Sans"/);
    expect(fonts.sort()).toEqual(['/static/noto-sans-400.ttf 200', '/static/noto-sans-600.ttf 200']);
  });

  it('admin: a report without details keeps its quote off the "Visible / Added" line', async () => {
    const filed = await fetch(`${main.url}/api/v1/nonsense/report`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ entryUuid: TOAST_ENTRY, reason: 'duplicate' }),
    });
    expect(filed.status).toBe(201);
    const page = await newPage();
    await page.goto(`${main.url}/admin#reports`);
    await page.evaluate((token) => sessionStorage.setItem('nonsense-admin-token', token), main.token);
    await page.reload();
    const card = page.locator('#report-list > li.card').filter({ has: page.locator(`code:text-is("${TOAST_ENTRY}")`) });
    await expect.poll(() => card.count()).toBe(1);
    expect(await card.locator('.card-details').count()).toBe(0);
    const quote = (await card.locator('blockquote.entry-text').boundingBox())!;
    const meta = (await card.locator('p.card-meta').last().boundingBox())!;
    expect(await card.locator('p.card-meta').last().textContent()).toMatch(/^VisibleAdded /);
    // 0.6rem between them, as between a quote and its details.
    expect(meta.y - (quote.y + quote.height)).toBeGreaterThanOrEqual(8);
  });

  it('takes the screenshots of the docs when asked', async () => {
    if (SCREENSHOTS === null) return;
    const toast = async (page: Page) => {
      // The home page with a chosen entry (one with a custom emoji), rendered by the page's own script.
      await page.route('**/api/v1/nonsense/random', async (route) => route.fulfill({ json: await (await fetch(`${main.url}/api/v1/nonsense/6cc93647-30cd-4d41-8e6f-fe77193fe4fa`)).json() }));
      await page.getByRole('link', { name: 'Another one' }).click();
      await expect.poll(() => page.locator('article.entry').getAttribute('data-uuid')).toBe('6cc93647-30cd-4d41-8e6f-fe77193fe4fa');
      await page.locator('body').click({ position: { x: 5, y: 400 } });
    };
    for (const scheme of ['light', 'dark'] as const) {
      const desktop = await newPage({ colorScheme: scheme });
      await desktop.goto(`${main.url}/`);
      await toast(desktop);
      await screenshot(desktop, `home-desktop-${scheme}`);
      const phone = await newPage({ colorScheme: scheme, viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
      await phone.goto(`${main.url}/`);
      await toast(phone);
      await screenshot(phone, `home-phone-${scheme}`);
      await phone.goto(`${main.url}/search?q=toast`);
      await screenshot(phone, `search-phone-${scheme}`);
      await phone.locator('article.entry').first().getByRole('link', { name: 'Report' }).click();
      await phone.getByLabel('Same or near-identical entry already exists').check();
      await screenshot(phone, `report-phone-${scheme}`);
    }
    const share = await newPage({ viewport: { width: 1200, height: 630 } });
    await share.goto(`${main.url}/nonsense/6cc93647-30cd-4d41-8e6f-fe77193fe4fa`);
    await screenshot(share, 'share-page-desktop');
    const dark = await newPage({ colorScheme: 'dark' });
    await dark.goto(`${main.url}/admin#entries`);
    await dark.evaluate((token) => sessionStorage.setItem('nonsense-admin-token', token), main.token);
    await dark.reload();
    await expect.poll(() => dark.locator('#entry-list > li.card').count()).toBeGreaterThan(3);
    await screenshot(dark, 'admin-desktop-dark');
  });

  it('logged no console errors and ran no script from an entry', () => {
    expect(problems).toEqual([]);
  });
});

/** acceptNextConfirm answers the next confirm() with OK (a test-wide handler dismisses anything else). */
async function acceptNextConfirm(page: Page, action: () => Promise<void>) {
  const handled = new Promise<void>((resolve) => {
    page.once('dialog', (dialog) => {
      if (dialog.type() === 'confirm') void dialog.accept();
      resolve();
    });
  });
  await Promise.all([handled, action()]);
}
