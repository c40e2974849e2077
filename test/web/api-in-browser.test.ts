/**
 * The API's browser clients in a real browser: /docs, where after "Authorize" with an admin token "Try
 * it out" on an admin operation calls the service with the token and shows its answer; and the admin
 * page, which pages through long lists by following their `Link` headers; and a script of another
 * origin reading the headers of answers (CORS). Debian's Chromium driven by
 * playwright-core (test/requirements.ts: skipped with a warning where it is missing, a failure under CI).
 */
import fs from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, freePort, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';
import { until } from '../wait.ts';
import { CHROMIUM, launchChromium } from '../chromium.ts';

// The one browser global an in-page callback uses: the project's TypeScript has no DOM library.
declare const sessionStorage: { setItem(key: string, value: string): void };

const SKIP = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');

const reported = entry('Reported from the docs test.', 1_700_000_000, 'dddddddd-d0c5-4000-8000-000000000001');
// More entries than a page of the admin search (20) and more reports than a page of reports (100).
const others = Array.from({ length: 24 }, (_, i) => entry(`Paged entry number ${i}.`, 1_700_000_100 + i, `dddddddd-d0c5-4000-8000-0000000001${String(i).padStart(2, '0')}`));
const REPORTS = 103;

describe.skipIf(SKIP)('the API in Chromium', () => {
  let t: TestContext;
  let url: string;
  let token: string;
  let browser: Browser;
  const problems: string[] = [];

  beforeAll(async () => {
    t = await createTestApp({ entries: [reported, ...others] });
    token = (await t.storage.tokens.create('docs'))!;
    const filedAt = Date.now();
    await t.storage.reports.create(reported.uuid, 'duplicate', 'Filed before the page opens.');
    // The oldest report, by a clear margin: reports of the same millisecond are listed by their ids.
    await until('the clock to pass the first report', () => Date.now() > filedAt + 5, { intervalMs: 1 });
    for (let i = 1; i < REPORTS; i++) await t.storage.reports.create(others[i % others.length]!.uuid, 'other', `Report number ${i}.`);
    const port = await freePort();
    await t.app.listen({ port, host: '127.0.0.1' });
    url = `http://127.0.0.1:${port}`;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function openDocs(): Promise<Page> {
    const page = await browser.newPage();
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      // The 401 is the service's answer without a token, which the test asks for.
      if (message.type() === 'error' && !message.text().includes('status of 401')) problems.push(message.text());
    });
    await page.goto(`${url}/docs`);
    await expect.poll(() => page.locator('.opblock-tag-section').count(), { timeout: 15_000 }).toBeGreaterThan(3);
    return page;
  }

  /** tryReports opens GET /api/v1/admin/reports, runs it, and gives the status the page shows. */
  async function tryReports(page: Page): Promise<string> {
    const operation = page.locator('#operations-admin-getAdminReports');
    await operation.locator('.opblock-summary').click();
    await operation.getByRole('button', { name: 'Try it out' }).click();
    await operation.getByRole('button', { name: 'Execute' }).click();
    const status = operation.locator('.live-responses-table .response .response-col_status');
    await expect.poll(() => status.count(), { timeout: 15_000 }).toBeGreaterThan(0);
    return (await status.first().textContent())!.trim();
  }

  it('lets a script of another origin read every header of an answer (CORS)', async () => {
    const page = await browser.newPage();
    // A JSON answer as the page: the API sets no Content-Security-Policy that would keep a script in.
    await page.goto(`${url}/healthz`);
    // localhost is another origin than 127.0.0.1: the browser applies CORS to the fetch.
    const other = url.replace('127.0.0.1', 'localhost');
    const seen = await page.evaluate(
      async ([base, uuid]) => {
        const answer = await fetch(`${base}/api/v1/nonsense/${uuid}`);
        const list = await fetch(`${base}/api/v1/admin/reports?limit=1`, { headers: { authorization: 'Bearer none' } });
        return {
          status: answer.status,
          etag: answer.headers.get('etag'),
          id: answer.headers.get('x-request-id'),
          listStatus: list.status,
          listType: list.headers.get('content-type'),
        };
      },
      [other, reported.uuid] as const,
    );
    expect(seen.status).toBe(200);
    expect(seen.etag).toMatch(/^W\/"/);
    expect(seen.id).toMatch(/^[0-9a-f-]{36}$/);
    // An error answer's headers too.
    expect(seen.listStatus).toBe(401);
    expect(seen.listType).toMatch(/^application\/problem\+json/);
    await page.close();
  });

  it('calls an admin operation with the token given to "Authorize"', async () => {
    const page = await openDocs();
    // Without a token the service refuses, and the page shows it.
    expect(await tryReports(page)).toBe('401');

    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').fill(token);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await expect.poll(() => dialog.getByRole('button', { name: 'Remove authorization' }).count()).toBe(1);
    await dialog.getByRole('button', { name: 'Close' }).click();

    const operation = page.locator('#operations-admin-getAdminReports');
    await operation.getByRole('button', { name: 'Execute' }).click();
    await expect.poll(async () => (await operation.locator('.live-responses-table .response .response-col_status').first().textContent())?.trim(), { timeout: 15_000 }).toBe('200');
    const body = await operation.locator('.live-responses-table .response-col_description pre').first().textContent();
    expect(JSON.parse(body!)).toHaveLength(100);
    expect(JSON.parse(body!)[0]).toMatchObject({ entryUuid: reported.uuid, reason: 'duplicate', status: 'open' });
    // The request went to the server the document names, with the token.
    const curl = await operation.locator('.curl-command').textContent();
    expect(curl).toContain(`${url}/api/v1/admin/reports`);
    expect(curl).toContain(`Authorization: Bearer ${token}`);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('admin page: follows the Link headers of reports and entries with "Load more"', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${url}/admin#reports`);
    await page.evaluate((value) => sessionStorage.setItem('nonsense-admin-token', value), token);
    await page.reload();
    const reports = page.locator('#report-list > li.card');
    await expect.poll(() => reports.count(), { timeout: 15_000 }).toBe(100);
    await expect.poll(() => page.locator('[data-count="reports"]').textContent()).toBe('100+');
    await page.locator('#report-more').click();
    await expect.poll(() => reports.count()).toBe(REPORTS);
    await expect.poll(() => page.locator('#report-more').isHidden()).toBe(true);

    await page.getByRole('link', { name: 'Entries' }).click();
    const entries = page.locator('#entry-list > li.card');
    await expect.poll(() => entries.count(), { timeout: 15_000 }).toBe(20);
    await page.locator('#entry-more').click();
    await expect.poll(() => entries.count()).toBe(others.length + 1);
    await expect.poll(() => page.locator('#entry-more').isHidden()).toBe(true);
    // Newest first, across the two pages.
    expect(await entries.last().getAttribute('data-uuid')).toBe(reported.uuid);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
