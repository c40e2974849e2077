/**
 * The site following the change feed, in Chromium against `nonsense serve` (its galaxy thread on):
 *
 * - the galaxy page adds a star when an entry is created through the admin API, moves it to the
 *   layout's place once the layout has one, takes it away when the entry is hidden or deleted and
 *   brings it back when it is shown again, without a reload;
 * - the admin page's report queue shows a new report, and lets go of one resolved elsewhere, without a
 *   reload; the queue it reads answers an unchanged `If-None-Match` with 304.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from '../chromium.ts';
import { tempDir } from '../helper.ts';
import { runCommand, startService, type RunningService } from '../process-helper.ts';
import { skipWithout } from '../requirements.ts';
import { until } from '../wait.ts';

const SKIP = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');
// Headless Chromium draws WebGL in software (SwiftShader) only when asked to, and without --disable-gpu.
const WEBGL_ARGS = [...CHROMIUM_ARGS.filter((arg) => arg !== '--disable-gpu'), '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];
const SEED = [
  'The cat sat on the warm windowsill all afternoon',
  'My cat ignores every toy I buy for her',
  'A cat and a dog walk into a bar',
  'The train to the coast was late again',
  'Trains are just buses with commitment issues',
  'The night train smells of coffee and rain',
  'It rained all day and the garden is happy',
  'Rain on the roof is the best alarm clock',
  'The weather forecast promised sun and delivered hail',
  'Toast always lands butter side down',
  'Breakfast is the toast of the town',
  'Never trust a toaster with opinions',
];

declare const document: { getElementById(id: string): { dataset: Record<string, string | undefined> } };
declare const sessionStorage: { setItem(key: string, value: string): void };

describe.skipIf(SKIP)('the site follows the changes in Chromium', () => {
  let dir: string;
  let service: RunningService;
  let token: string;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];

  const admin = (method: string, apiPath: string, body?: unknown) =>
    fetch(`${service.base}/api/v1/admin${apiPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
    return page;
  }

  const galaxyData = (page: Page, name: string) => page.evaluate((key) => document.getElementById('galaxy-view').dataset[key], name);

  beforeAll(async () => {
    dir = tempDir();
    const env = { DATABASE_URL: path.join(dir, 'live.db') };
    const { chromium } = await import('playwright-core');
    [service, browser] = await Promise.all([startService(env), chromium.launch({ executablePath: CHROMIUM, headless: true, args: WEBGL_ARGS })]);
    token = (await runCommand(['token', 'create', 'live'], env)).stdout.trim().split('\n').at(-1)!;
    for (const text of SEED) expect((await admin('POST', '/nonsense', { text })).status).toBe(201);
    // The galaxy thread lays out the seed within seconds (more on a busy machine).
    const stars = async () => {
      const response = await fetch(`${service.base}/api/v1/nonsense/galaxy`);
      return response.ok ? (await response.text()).split('\r\n').length - 1 : 0;
    };
    await until(() => `the seed to be laid out:\n${service.output()}`, async () => (await stars()) === SEED.length, { timeoutMs: 120_000, intervalMs: 100 });
  }, 180_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await browser?.close();
    await service?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    expect(problems).toEqual([]);
  });

  it('adds a star for a new entry, takes it away when hidden or deleted, and brings it back when shown', async () => {
    const page = await newPage();
    await page.goto(`${service.base}/galaxy`);
    await expect.poll(() => galaxyData(page, 'state'), { timeout: 60_000 }).toBe('ready');
    expect(await galaxyData(page, 'stars')).toBe(String(SEED.length));
    await expect.poll(() => galaxyData(page, 'live'), { timeout: 10_000 }).toBe('on');

    const highlight = async (term: string) => {
      await page.getByLabel('Highlight entries containing').fill(term);
      await page.getByRole('button', { name: 'Highlight' }).click();
    };
    const matches = page.locator('#galaxy-matches');

    const created = await admin('POST', '/nonsense', { text: 'A quokka learned to juggle oranges' });
    expect(created.status).toBe(201);
    const { uuid } = (await created.json()) as { uuid: string };
    await expect.poll(() => galaxyData(page, 'stars'), { timeout: 5_000 }).toBe(String(SEED.length + 1));
    // The star is the entry's: the search finds it among the stars.
    await highlight('quokka');
    await expect.poll(() => matches.textContent()).toMatch(new RegExp(`^1 of ${SEED.length + 1} stars match “quokka”`));
    await page.locator('#galaxy-canvas').focus();
    await page.keyboard.press('n');
    await expect.poll(() => page.locator('#galaxy-tip').getAttribute('data-uuid')).toBe(uuid);
    await expect.poll(() => page.locator('#galaxy-tip').textContent()).toMatch(/^A quokka learned to juggle oranges/);
    // The layout places it within seconds; the page then moves the star to that place.
    await expect.poll(() => galaxyData(page, 'placing'), { timeout: 60_000 }).toBe('0');
    const placed = (await (await fetch(`${service.base}/api/v1/nonsense/galaxy?format=json`)).json()) as { uuid: string }[];
    expect(placed.map((star) => star.uuid)).toContain(uuid);

    expect((await admin('PATCH', `/nonsense/${uuid}`, { state: 'hidden' })).status).toBe(200);
    await expect.poll(() => galaxyData(page, 'stars'), { timeout: 5_000 }).toBe(String(SEED.length));
    // It was selected: the tip lets go of it, and N now walks no star of that search.
    await expect.poll(() => page.locator('#galaxy-tip').isHidden()).toBe(true);
    await highlight('quokka');
    await expect.poll(() => matches.textContent()).toBe('No star matches “quokka”.');

    expect((await admin('PATCH', `/nonsense/${uuid}`, { state: 'visible' })).status).toBe(200);
    await expect.poll(() => galaxyData(page, 'stars'), { timeout: 5_000 }).toBe(String(SEED.length + 1));
    await highlight('quokka');
    await expect.poll(() => matches.textContent()).toMatch(new RegExp(`^1 of ${SEED.length + 1} stars match`));

    expect((await admin('DELETE', `/nonsense/${uuid}`)).status).toBe(204);
    await expect.poll(() => galaxyData(page, 'stars'), { timeout: 5_000 }).toBe(String(SEED.length));
    // Every other star is still there, and still found.
    await highlight('cat');
    await expect.poll(() => matches.textContent()).toMatch(new RegExp(`^3 of ${SEED.length} stars match “cat”`));
  }, 150_000);

  it('shows a new report in the admin queue, and lets go of one resolved elsewhere, without a reload', async () => {
    const entries = (await (await fetch(`${service.base}/api/v1/nonsense?format=json&q=toast`)).json()) as { uuid: string; nonsense: string }[];
    const entry = entries[0]!;
    const page = await newPage();
    await page.goto(`${service.base}/admin#reports`);
    await page.evaluate((value) => sessionStorage.setItem('nonsense-admin-token', value), token);
    await page.reload();
    const list = page.locator('#report-list');
    await expect.poll(() => list.textContent()).toBe('No open reports. Nothing to do.');

    // The queue's page answers an unchanged If-None-Match with 304.
    const queue = (etag?: string) =>
      fetch(`${service.base}/api/v1/admin/reports?status=open`, { headers: { authorization: `Bearer ${token}`, ...(etag ? { 'if-none-match': etag } : {}) } });
    const before = await queue();
    const tag = before.headers.get('etag')!;
    expect(tag).toMatch(/^W\/"[\w-]+"$/);
    expect(before.headers.get('cache-control')).toBe('no-store');
    expect((await queue(tag)).status).toBe(304);

    const report = await fetch(`${service.base}/api/v1/nonsense/report`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ entryUuid: entry.uuid, reason: 'duplicate', details: 'Seen it twice today' }),
    });
    expect(report.status).toBe(201);
    const { id } = (await report.json()) as { id: string };
    const after = await queue(tag);
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(tag);

    await expect.poll(() => list.locator('li.card').count(), { timeout: 10_000 }).toBe(1);
    expect(await list.locator('li.card').textContent()).toContain('Seen it twice today');
    expect(await list.locator('li.card blockquote').textContent()).toBe(entry.nonsense);
    await expect.poll(() => page.locator('[data-count="reports"]').textContent()).toBe('1');

    // A second report lands after the first; the first card is the same element as before.
    await list.locator('li.card').first().evaluate((card) => ((card as unknown as { dataset: Record<string, string> }).dataset.seen = 'yes'));
    const second = await fetch(`${service.base}/api/v1/nonsense/report`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ entryUuid: entries[1]!.uuid, reason: 'other' }),
    });
    expect(second.status).toBe(201);
    await expect.poll(() => list.locator('li.card').count(), { timeout: 10_000 }).toBe(2);
    expect(await list.locator('li.card').first().getAttribute('data-seen')).toBe('yes');
    await expect.poll(() => page.locator('[data-count="reports"]').textContent()).toBe('2');

    // Another moderator dismisses the first: it leaves this page's queue.
    expect((await admin('POST', `/reports/${id}/dismiss`)).status).toBe(200);
    await expect.poll(() => list.locator('li.card').count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => page.locator('[data-count="reports"]').textContent()).toBe('1');
    expect(await list.locator('li.card').textContent()).not.toContain('Seen it twice today');
  }, 60_000);
});
