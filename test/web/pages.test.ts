/**
 * The web site at the HTTP level: pages, their headers, escaping, search paging, the form-based
 * report, static files and the admin search endpoint. The browser flows are in browser.test.ts.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_DIR } from '../../src/demo/load-demo.ts';
import { SITE_CSP } from '../../src/web/layout.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const HOSTILE = '<script>alert(1)</script> "quotes" & ampersands';
const ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt; &quot;quotes&quot; &amp; ampersands';
const DAY = 86_400;
// 2024-03-01T00:00:00Z
const MARCH_1 = 1_709_251_200;

function uuid(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

/** The entries shown on a search page, in order. */
function shown(html: string): string[] {
  return [...html.matchAll(/<article class="entry" data-uuid="([0-9a-f-]+)"/g)].map((m) => m[1]!);
}

function hrefOf(html: string, rel: 'next' | 'prev'): string | undefined {
  const match = new RegExp(`rel="${rel}" href="([^"]+)"`).exec(html);
  return match ? match[1]!.replaceAll('&amp;', '&') : undefined;
}

/** Page bodies must not run or style anything inline: the CSP would block it anyway. */
function expectNoInlineCode(html: string) {
  expect(html).not.toMatch(/<script(?![^>]*\ssrc=)/);
  expect(html).not.toMatch(/<style/);
  expect(html).not.toMatch(/\sstyle=/);
  expect(html).not.toMatch(/\son[a-z]+=/);
}

describe('web pages', () => {
  describe('with one entry', () => {
    let t: TestContext;
    beforeAll(async () => {
      t = await createTestApp({
        variables: [{ name: '$ANIMAL$', description: 'An animal', values: ['heron'] }],
        entries: [entry(`${HOSTILE} $ANIMAL$ met $AUTHOR$ :toast: :nope:`, 1_700_000_000, uuid(1))],
      });
      const toast = fs.readFileSync(`${DEMO_DIR}/emojis/toast.png`);
      await t.storage.emojis.insertMissing([{ name: 'toast', contentType: 'image/png', image: new Uint8Array(toast) }]);
    });
    afterAll(() => t.close());

    it('/ shows the entry escaped, variables resolved, known emojis as images, under a strict CSP', async () => {
      const res = await t.app.inject('/');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-security-policy']).toBe(SITE_CSP);
      expect(SITE_CSP).toContain("script-src 'self'");
      expect(SITE_CSP).not.toContain('unsafe');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      const html = res.body;
      expect(html).toContain(`${ESCAPED} heron met someone <img class="emoji" src="/api/v1/emojis/toast.png" alt=":toast:"`);
      expect(html).toContain(':nope:</blockquote>');
      expect(html).not.toContain('<script>alert');
      expect(html).toContain(`href="/nonsense/${uuid(1)}"`);
      expect(html).toContain(`href="/api/v1/nonsense/${uuid(1)}.png" download=`);
      expect(html).toContain('<dialog id="report-dialog"');
      expect(html).toContain('data-action="another"');
      expectNoInlineCode(html);
    });

    it('search, report form and admin pages escape the text too and have no inline code', async () => {
      const expected: Record<string, string | null> = {
        '/search?q=script': '&lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt; &quot;quotes&quot; &amp; ampersands',
        [`/nonsense/${uuid(1)}/report`]: ESCAPED,
        // The admin page is a frame: its script fills it from the JSON API with textContent.
        '/admin': null,
      };
      for (const [url, text] of Object.entries(expected)) {
        const res = await t.app.inject(url);
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-security-policy']).toBe(SITE_CSP);
        expect(res.body).not.toContain('<script>alert');
        expectNoInlineCode(res.body);
        if (text !== null) expect(res.body).toContain(text);
      }
    });

    it('links only static files that exist, and serves them with ETag and long caching when versioned', async () => {
      const html = (await t.app.inject('/admin')).body;
      const links = [...html.matchAll(/(?:src|href)="(\/static\/[^"]+)"/g)].map((m) => m[1]!);
      // The icon, the stylesheet, the page's script module and, preloaded, the modules it imports.
      expect(links.map((link) => link.replace(/\?v=[0-9a-f]+$/, ''))).toEqual([
        '/static/icon.svg',
        '/static/site.css',
        '/static/admin.js',
        ...['api', 'catalog', 'entries', 'log', 'reports', 'ui'].map((name) => `/static/admin-${name}.js`),
        '/static/lib-dom.js',
      ]);
      expect(html).toContain(`<script type="module" src="${links[2]}"></script>`);
      expect(html.match(/<link rel="modulepreload" href="[^"]+">/g)).toHaveLength(links.length - 3);
      for (const link of links) {
        const res = await t.app.inject(link);
        expect(res.statusCode).toBe(200);
        expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
        const again = await t.app.inject({ url: link, headers: { 'if-none-match': res.headers.etag as string } });
        expect(again.statusCode).toBe(304);
      }
      // A module names each module it imports by its versioned address, served and cacheable alike.
      const script = await t.app.inject(links[2]!);
      const imports = [...script.body.matchAll(/^import [^']*'\.\/([^']+)'/gm)].map((m) => `/static/${m[1]!}`);
      expect(imports.length).toBeGreaterThan(3);
      for (const link of imports) {
        expect(link).toMatch(/\.js\?v=[0-9a-f]{16}$/);
        expect(links).toContain(link);
      }
      // Its hash covers those of what it imports: the link of the page changes with any of them.
      expect(script.headers.etag).toBe(`"${links[2]!.split('?v=')[1]}"`);
      expect(script.body).not.toMatch(/from '\.\.?\/[^']*\.js'/);
      const font = await t.app.inject('/static/noto-sans-400.ttf');
      expect(font.headers['content-type']).toBe('font/ttf');
      expect(font.headers['cache-control']).toBe('public, max-age=300, must-revalidate');
      expect(font.headers.etag).toMatch(/^"[0-9a-f]{16}"$/);
      const missing = await t.app.inject('/static/nothing.js');
      expect(missing.statusCode).toBe(404);
      expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
    });

    it('answers a current If-None-Match on a page with 304', async () => {
      const first = await t.app.inject('/search');
      expect(first.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
      const again = await t.app.inject({ url: '/search', headers: { 'if-none-match': first.headers.etag as string } });
      expect(again.statusCode).toBe(304);
    });

    it('answers problem+json for bad search parameters and unknown pages', async () => {
      for (const url of ['/search?from=2024-02-31', '/search?to=yesterday', `/search?q=${'x'.repeat(201)}`, '/search?next=abc', '/no-such-page']) {
        const res = await t.app.inject(url);
        expect(res.statusCode, url).toBe(url === '/no-such-page' ? 404 : 400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.json().detail).toBeTruthy();
      }
    });
  });

  it('/ says so when there are no entries', async () => {
    const t = await createTestApp();
    try {
      const res = await t.app.inject('/');
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('No entries yet');
    } finally {
      await t.close();
    }
  });

  describe('search', () => {
    let t: TestContext;
    // 45 entries, one a day from 1 March 2024; every third one mentions a heron.
    const entries = Array.from({ length: 45 }, (_, i) => entry(`Entry ${i + 1}${i % 3 === 0 ? ' with a Heron' : ''}`, MARCH_1 + i * DAY + 3600, uuid(100 + i)));
    beforeAll(async () => {
      t = await createTestApp({ entries });
    });
    afterAll(() => t.close());

    it('reads an embedded database file in the worker thread, not on the event loop', async () => {
      const searched = vi.spyOn(t.app.readWorkers!, 'searchPage');
      const page = (await t.app.inject('/search?q=heron')).body;
      expect(searched).toHaveBeenCalledTimes(1);
      expect(page).toContain('1–15 of 15 entries');
      searched.mockRestore();
    });

    it('pages forwards and backwards with a count, never skipping or repeating', async () => {
      const first = (await t.app.inject('/search')).body;
      expect(first).toContain('1–20 of 45 entries');
      expect(hrefOf(first, 'prev')).toBeUndefined();
      const second = (await t.app.inject(hrefOf(first, 'next')!)).body;
      expect(second).toContain('21–40 of 45 entries');
      expect(second).toContain('<ol class="result-list" start="21">');
      const third = (await t.app.inject(hrefOf(second, 'next')!)).body;
      expect(third).toContain('41–45 of 45 entries');
      expect(hrefOf(third, 'next')).toBeUndefined();
      expect([...shown(first), ...shown(second), ...shown(third)]).toEqual(entries.map((e) => e.uuid));
      const back = (await t.app.inject(hrefOf(third, 'prev')!)).body;
      expect(shown(back)).toEqual(shown(second));
      const start = (await t.app.inject(hrefOf(back, 'prev')!)).body;
      expect(shown(start)).toEqual(shown(first));
    });

    it('filters by term and by whole days (both included), keeping the filters in the page links', async () => {
      const herons = (await t.app.inject('/search?q=heron')).body;
      expect(herons).toContain('1–15 of 15 entries matching');
      expect(herons).toContain('Entry 1 with a <mark>Heron</mark>');
      const days = (await t.app.inject('/search?from=2024-03-02&to=2024-03-04')).body;
      expect(shown(days)).toEqual([uuid(101), uuid(102), uuid(103)]);
      const both = (await t.app.inject('/search?q=heron&from=2024-03-01&to=2024-04-14')).body;
      expect(both).toContain('of 15 entries matching');
      const wide = (await t.app.inject('/search?q=entry&from=2024-03-01&to=2024-04-30')).body;
      expect(hrefOf(wide, 'next')).toMatch(/^\/search\?q=entry&from=2024-03-01&to=2024-04-30&next=\d+\.[0-9a-f-]+$/);
      expect((await t.app.inject('/search?q=zebra')).body).toContain('No entries match');
    });

    it('leaves out hidden entries', async () => {
      await setState(t.storage, uuid(100), 'hidden');
      try {
        expect((await t.app.inject('/search?q=heron')).body).toContain('1–14 of 14 entries matching');
      } finally {
        await setState(t.storage, uuid(100), 'visible');
      }
    });
  });

  describe('report form without JavaScript', () => {
    let t: TestContext;
    const reported = entry('Please report me.', 1_700_000_000, uuid(200));
    const form = (body: string) => ({
      method: 'POST' as const,
      url: `/nonsense/${reported.uuid}/report`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: body,
    });
    beforeAll(async () => {
      t = await createTestApp({ entries: [reported], env: { RATE_LIMIT_REPORT: '3/10m' } });
    });
    afterAll(() => t.close());

    it('shows the six reasons, files the report like the API and redirects to a confirmation', async () => {
      const page = (await t.app.inject(`/nonsense/${reported.uuid}/report`)).body;
      expect(page.match(/type="radio"/g)).toHaveLength(6);
      expect(page).toContain(`action="/nonsense/${reported.uuid}/report"`);
      const res = await t.app.inject(form('reason=other&details=It+is+%3Cb%3Ebold%3C%2Fb%3E'));
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`/nonsense/${reported.uuid}/report?sent=1`);
      const [report] = await t.storage.reports.list('open');
      expect(report).toMatchObject({ entryUuid: reported.uuid, reason: 'other', details: 'It is <b>bold</b>' });
      expect((await t.app.inject(res.headers.location as string)).body).toContain('Your report was sent');
    });

    it('answers problem+json for a bad form, an unknown entry and too many reports', async () => {
      const bad = await t.app.inject(form('reason=boring'));
      expect(bad.statusCode).toBe(400);
      expect(bad.json().detail).toMatch(/reason/);
      const unknown = await t.app.inject({ ...form('reason=duplicate'), url: `/nonsense/${uuid(999)}/report` });
      expect(unknown.statusCode, unknown.body).toBe(404);
      // The limit is the API's: filed reports and reports on unknown entries count, refused forms do
      // not. This address has used two of three by now.
      expect((await t.app.inject(form('reason=duplicate'))).statusCode).toBe(303);
      const limited = await t.app.inject(form('reason=duplicate'));
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(limited.json().detail).toMatch(/Too many requests/);
    });
  });

  describe('GET /api/v1/admin/nonsense', () => {
    let t: TestContext;
    let auth: Record<string, string>;
    const all = Array.from({ length: 7 }, (_, i) => entry(`Admin search ${i} ${i % 2 ? 'odd' : 'even'}`, 1_700_000_000 + i, uuid(300 + i)));
    beforeAll(async () => {
      t = await createTestApp({ entries: all });
      auth = { authorization: `Bearer ${await t.storage.tokens.create('mod')}` };
      await setState(t.storage, uuid(301), 'hidden');
    });
    afterAll(() => t.close());

    it('needs a token', async () => {
      const res = await t.app.inject('/api/v1/admin/nonsense');
      expect(res.statusCode).toBe(401);
    });

    it('finds entries in any state, newest first, by term and state, a page at a time', async () => {
      const get = (url: string) => t.app.inject({ url, headers: auth });
      const uuids = (res: { json(): { uuid: string }[] }) => res.json().map((e) => e.uuid);
      const first = await get('/api/v1/admin/nonsense?limit=3');
      expect(uuids(first)).toEqual([uuid(306), uuid(305), uuid(304)]);
      // The next page is announced in a Link header; the body stays an array.
      const next = /^<(.+)>; rel="next"$/.exec(String(first.headers.link))![1]!;
      expect(next).toBe(`http://localhost/api/v1/admin/nonsense?limit=3&cursor=1700000004.${uuid(304)}`);
      const second = await get(new URL(next).pathname + new URL(next).search);
      expect(uuids(second)).toEqual([uuid(303), uuid(302), uuid(301)]);
      const last = await get(`/api/v1/admin/nonsense?limit=10&cursor=${new URL(next).searchParams.get('cursor')}`);
      expect(uuids(last)).toEqual([uuid(303), uuid(302), uuid(301), uuid(300)]);
      expect(last.headers.link).toBeUndefined();
      const hidden = await get('/api/v1/admin/nonsense?state=hidden');
      expect(hidden.json()).toEqual([{ uuid: uuid(301), text: 'Admin search 1 odd', state: 'hidden', timestamp: 1_700_000_001 }]);
      const odd = await get('/api/v1/admin/nonsense?q=ODD&state=visible');
      expect(uuids(odd)).toEqual([uuid(305), uuid(303)]);
      expect(uuids(await get('/api/v1/admin/nonsense?state=any'))).toHaveLength(7);
    });

    it('reads an embedded database file in the worker thread, not on the event loop', async () => {
      const listed = vi.spyOn(t.app.readWorkers!, 'list');
      const res = await t.app.inject({ url: '/api/v1/admin/nonsense?q=even', headers: auth });
      expect(listed).toHaveBeenCalledTimes(1);
      expect(res.json()).toHaveLength(4);
      listed.mockRestore();
    });

    it('answers 400 for a bad state, cursor or limit', async () => {
      for (const query of ['state=gone', 'cursor=yesterday', 'limit=0', 'limit=1001', `q=${'x'.repeat(201)}`]) {
        const res = await t.app.inject({ url: `/api/v1/admin/nonsense?${query}`, headers: auth });
        expect(res.statusCode, query).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.json().parameter, query).toBe(query.split('=')[0]);
      }
    });
  });
});
