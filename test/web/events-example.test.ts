/**
 * docs/examples/events.html, the documented browser copy, in Chromium: served from another origin, it
 * loads the export, follows the event stream with EventSource, and keeps up with entries created and
 * hidden through the admin API.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';
import { CHROMIUM, launchChromium } from '../chromium.ts';

declare const window: { liveCopy: { copy: Map<string, { text: string; timestamp: number }>; revision: number } };

const SKIP = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');
const PAGE = fs.readFileSync('docs/examples/events.html');

describe.skipIf(SKIP)('the EventSource example in Chromium', () => {
  let t: TestContext;
  let api: string;
  let site: http.Server;
  let pageUrl: string;
  let browser: Browser;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ entries: Array.from({ length: 20 }, (_, i) => entry(`Known before the page opens, ${i}.`, 1_700_000_000 + i, `bcbcbcbc-0000-4000-8000-${String(i).padStart(12, '0')}`)) });
    auth = { authorization: `Bearer ${(await t.storage.tokens.create('page'))!}` };
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    api = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    // Another origin (localhost, another port) serves the page.
    site = http.createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    pageUrl = `http://localhost:${(site.address() as AddressInfo).port}/events.html?api=${encodeURIComponent(api)}`;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await t?.close();
  });

  it('keeps a copy equal to the export as entries are created and hidden', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    await page.goto(pageUrl);
    // The page's first export starts the read workers: on a host busy with the rest of the suite, seconds.
    await page.waitForFunction(() => window.liveCopy?.copy.size === 20, undefined, { timeout: 25_000 });

    const created = await t.app.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: auth, payload: { text: 'Seen by the page within a second.' } });
    const uuid = created.json().uuid as string;
    await page.locator(`li[data-uuid="${uuid}"]`).waitFor({ timeout: 10_000 });
    await t.app.inject({ method: 'PATCH', url: '/api/v1/admin/nonsense/bcbcbcbc-0000-4000-8000-000000000003', headers: auth, payload: { state: 'hidden' } });
    const { revision } = (await t.app.inject('/api/v1/nonsense/status')).json();
    await page.waitForFunction((r) => window.liveCopy.revision === r, revision, { timeout: 10_000 });

    const copy = await page.evaluate(() => Object.fromEntries([...window.liveCopy.copy].map(([uuid, e]) => [uuid, { text: e.text, timestamp: e.timestamp }])));
    const exported = (await t.app.inject('/api/v1/nonsense?format=json')).json() as { uuid: string; nonsense: string; original_nonsense?: string; timestamp: number }[];
    expect(copy).toEqual(Object.fromEntries(exported.map((e) => [e.uuid, { text: e.original_nonsense ?? e.nonsense, timestamp: e.timestamp }])));
    expect(copy['bcbcbcbc-0000-4000-8000-000000000003']).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
