/**
 * A page script that revalidates by hand in a real browser: it keeps an answer's ETag and asks again
 * with `If-None-Match` itself, which makes fetch() send `Cache-Control: no-cache` and `Pragma:
 * no-cache` as well. The service answers 304 all the same, and the script sees that 304. Debian's
 * Chromium driven by playwright-core (test/requirements.ts: skipped with a warning where it is missing,
 * a failure under CI).
 */
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LANE_REVISION_AGE_MS, createTestApp, entry, freePort, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';
import { CHROMIUM, launchChromium } from '../chromium.ts';

const SKIP = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');

const ONE = entry('Revalidated by hand in a browser.', 1_700_000_000, 'abababab-0000-4000-8000-000000000001');

/** What the page script saw: the first answer's ETag and status, and the revalidation's. */
interface Seen {
  etag: string | null;
  first: number;
  again: number;
  body: string;
}

describe.skipIf(SKIP)('revalidation by hand in Chromium', () => {
  let t: TestContext;
  let url: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await createTestApp({ entries: [ONE], revisionMaxAgeMs: LANE_REVISION_AGE_MS });
    const port = await freePort();
    await t.app.listen({ port, host: '127.0.0.1' });
    url = `http://127.0.0.1:${port}`;
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`${url}/healthz`);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** revalidate has the page fetch `path`, then fetch it again with its ETag in If-None-Match, in `mode`. */
  const revalidate = (path: string, mode: 'no-store' | 'default') =>
    page.evaluate(
      async ([target, cache]) => {
        const first = await fetch(target!);
        await first.text();
        const etag = first.headers.get('etag');
        // Node's types of fetch leave out `cache`, which the browser's take.
        const again = await fetch(target!, { headers: { 'If-None-Match': etag ?? '' }, cache } as RequestInit);
        return { etag, first: first.status, again: again.status, body: await again.text() } satisfies Seen;
      },
      [path, mode],
    );

  /** answered counts the answers with `status` the service has given on `route`, from /metrics. */
  const answered = async (route: string, status: number) => {
    const metrics = (await t.app.inject('/metrics')).body;
    const line = new RegExp(`^http_requests_total\\{method="GET",route="${route.replace(/[/.*]/g, '\\$&')}",status="${status}"\\} (\\d+)$`, 'm').exec(metrics);
    return Number(line?.[1] ?? 0);
  };

  it('gets a 304 for an entry from the fast lane, which saw fetch’s no-cache headers', async () => {
    const served = vi.spyOn(t.app.fastLane, 'serve');
    try {
      const path = `/api/v1/nonsense/${ONE.uuid}`;
      // The lane answers once the entry snapshot is current.
      await expect.poll(async () => (await fetch(`${url}${path}`)).status === 200 && served.mock.results.at(-1)?.value === true).toBe(true);
      const before = await answered('/api/v1/nonsense/:id', 304);
      const seen = await revalidate(path, 'no-store');
      expect(seen).toMatchObject({ first: 200, again: 304, body: '' });
      expect(seen.etag).toMatch(/^W\/"r\d+"$/);
      expect(await answered('/api/v1/nonsense/:id', 304)).toBe(before + 1);
      // The request the lane answered last is the browser's revalidation, with the headers fetch adds.
      const request: IncomingMessage = served.mock.calls.at(-1)![0];
      expect(served.mock.results.at(-1)?.value).toBe(true);
      expect(request.headers).toMatchObject({ 'if-none-match': seen.etag, 'cache-control': 'no-cache', pragma: 'no-cache' });
    } finally {
      served.mockRestore();
    }
  });

  it('gets 304s from the Fastify routes too, in the no-store and the default cache mode', async () => {
    for (const [path, route] of [
      ['/api/v1/nonsense/status', '/api/v1/nonsense/status'],
      ['/api/v1/variables', '/api/v1/variables'],
      ['/odata/v2/nonsense_list?$format=json', '/odata/v2/*'],
    ] as const) {
      for (const mode of ['no-store', 'default'] as const) {
        const before = await answered(route, 304);
        await expect.poll(() => revalidate(path, mode), { timeout: 10_000 }).toMatchObject({ first: 200, again: 304, body: '' });
        expect(await answered(route, 304), `${path} (${mode})`).toBeGreaterThan(before);
      }
    }
  });
});
