/**
 * Errors for people: on the site's paths a browser (Accept preferring text/html) gets the error as a
 * page of the site with the same status and headers; the API keeps problem+json whatever it is asked.
 * Also the favicon and the share page's font. The same pages in Chromium are in browser.test.ts.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SITE_CSP } from '../../src/web/layout.ts';
import { prefersHtml } from '../../src/web/error-page.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const VISIBLE = '00000000-0000-4000-8000-00000000aa01';
const HIDDEN = '00000000-0000-4000-8000-00000000aa02';
const UNKNOWN = '00000000-0000-4000-8000-00000000aa99';

function expectErrorPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, heading: string) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['content-security-policy']).toBe(SITE_CSP);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(String(res.headers.vary)).toMatch(/Accept/);
  // The site's frame: stylesheet, header with the navigation, the footer.
  expect(res.body).toMatch(/<link rel="stylesheet" href="\/static\/site\.css\?v=[0-9a-f]{16}">/);
  expect(res.body).toContain('<nav aria-label="Site">');
  expect(res.body).toContain('<footer class="site-footer">');
  expect(res.body).toContain(`<h1 id="error-title">${heading}</h1>`);
  expect(res.body).toContain(`<p class="error-status">${status} · `);
}

function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(JSON.parse(res.body)).toMatchObject({ status, type: 'about:blank' });
}

describe('prefersHtml', () => {
  it('is true for browser navigations and false for API clients', () => {
    expect(prefersHtml(BROWSER)).toBe(true);
    expect(prefersHtml('text/html')).toBe(true);
    expect(prefersHtml('text/*')).toBe(true);
    expect(prefersHtml(undefined)).toBe(false);
    expect(prefersHtml('')).toBe(false);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml('application/json')).toBe(false);
    expect(prefersHtml('application/problem+json, text/html;q=0.5')).toBe(false);
    expect(prefersHtml('text/html;q=0.5, application/json')).toBe(false);
    expect(prefersHtml('text/html;q=0, */*')).toBe(false);
    expect(prefersHtml('text/html, application/json;q=0.9')).toBe(true);
    expect(prefersHtml('garbage, ;;;, /, text/html;q=abc')).toBe(true);
  });
});

describe('error pages', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [entry('A visible entry', 1_700_000_000, VISIBLE), entry('A hidden <b>entry</b>', 1_700_000_001, HIDDEN)] });
    await setState(t.storage, HIDDEN, 'hidden');
  });
  afterAll(() => t.close());

  const get = (url: string, accept = BROWSER) => t.app.inject({ url, headers: { accept } });

  it('answers 404 on unknown pages and dead share links with the site page, the detail escaped', async () => {
    const unknown = await get('/no/such/<page>');
    expectErrorPage(unknown, 404, 'Nothing here');
    expect(unknown.body).toContain('There is nothing at /no/such/%3Cpage%3E.');
    for (const url of [`/nonsense/${HIDDEN}`, `/nonsense/${UNKNOWN}`, `/nonsense/${HIDDEN}/report`]) {
      const res = await get(url);
      expectErrorPage(res, 404, 'Nothing here');
      expect(res.body).toContain(`No entry has the UUID ${url.split('/')[2]}.`);
      expect(res.body).not.toContain('hidden &lt;b&gt;');
    }
    expectErrorPage(await get('/static/missing.css'), 404, 'Nothing here');
  });

  it('answers other errors of the site as pages too, with their headers', async () => {
    expectErrorPage(await get('/nonsense/not-a-uuid'), 400, 'That did not work');
    expectErrorPage(await get('/search?from=yesterday'), 400, 'That did not work');
    const post = await t.app.inject({ method: 'POST', url: '/search', headers: { accept: BROWSER } });
    expectErrorPage(post, 405, 'Not possible here');
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('keeps problem+json for clients that do not prefer HTML, and says that the answer varies', async () => {
    for (const accept of ['*/*', 'application/json', 'application/problem+json', '']) {
      const res = await get(`/nonsense/${UNKNOWN}`, accept);
      expectProblem(res, 404);
      expect(res.headers.vary).toMatch(/Accept/);
    }
  });

  it('keeps problem+json (or OData errors) on the API paths, even for a browser', async () => {
    expectProblem(await get(`/api/v1/nonsense/${HIDDEN}`), 404);
    expectProblem(await get('/api/v1/no-such-thing'), 404);
    expectProblem(await get('/api/v1/admin/reports'), 401);
    expectProblem(await get('/healthz/nope'), 404);
    expectProblem(await get('/openapi.json/nope'), 404);
    const odata = await get('/odata/v2/no_such_set');
    expect(odata.statusCode).toBe(404);
    expect(odata.headers['content-type']).not.toMatch(/text\/html/);
    expect((await get(`/api/v1/nonsense/${HIDDEN}`)).headers.vary ?? '').not.toMatch(/Accept/);
  });

  it('shows a 500 as a page with the request id and nothing of the failure', async () => {
    const failure = new Error('secret SQL detail');
    const spies = [vi.spyOn(t.app.entryService, 'findEntry').mockRejectedValue(failure), vi.spyOn(t.app.entryService, 'find').mockRejectedValue(failure)];
    try {
      const res = await t.app.inject({ url: `/nonsense/${VISIBLE}`, headers: { accept: BROWSER, 'x-request-id': 'req-500-page' } });
      expectErrorPage(res, 500, 'Something went wrong');
      expect(res.body).toContain('report it with request id req-500-page');
      expect(res.body).not.toContain('secret SQL detail');
      expectProblem(await t.app.inject({ url: `/api/v1/nonsense/${VISIBLE}`, headers: { accept: BROWSER } }), 500);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('shows an unreachable database as a 503 page with Retry-After', async () => {
    const spy = vi.spyOn(t.app.entryService, 'findEntry').mockRejectedValue(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    try {
      const res = await get(`/nonsense/${VISIBLE}`);
      expectErrorPage(res, 503, 'Not available right now');
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      spy.mockRestore();
    }
  });

  it('serves /favicon.ico: the site icon as an ICO of PNGs, revalidated by its ETag', async () => {
    const res = await t.app.inject('/favicon.ico');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/x-icon');
    expect(res.headers['cache-control']).toBe('public, max-age=86400');
    const ico = res.rawPayload;
    expect([ico.readUInt16LE(0), ico.readUInt16LE(2), ico.readUInt16LE(4)]).toEqual([0, 1, 3]);
    for (let i = 0; i < 3; i++) {
      const entryAt = 6 + 16 * i;
      const size = [16, 32, 48][i]!;
      expect([ico.readUInt8(entryAt), ico.readUInt8(entryAt + 1)]).toEqual([size, size]);
      const length = ico.readUInt32LE(entryAt + 8);
      const png = ico.subarray(ico.readUInt32LE(entryAt + 12), ico.readUInt32LE(entryAt + 12) + length);
      expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
      // The PNG's own header says the same size.
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([size, size]);
    }
    const again = await t.app.inject({ url: '/favicon.ico', headers: { 'if-none-match': String(res.headers.etag) } });
    expect(again.statusCode).toBe(304);
    // The pages link the SVG icon, which is served too.
    const icon = /<link rel="icon" href="([^"]+)" type="image\/svg\+xml">/.exec((await get('/')).body)![1]!;
    expect((await t.app.inject(icon)).headers['content-type']).toBe('image/svg+xml');
  });

  it('the share page loads the site font under its CSP', async () => {
    const res = await get(`/nonsense/${VISIBLE}`);
    expect(res.statusCode).toBe(200);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("font-src 'self'");
    const style = /<style>([\s\S]*)<\/style>/.exec(res.body)![1]!;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);
    expect(style).toMatch(/font-family:"Noto Sans",/);
    const fonts = [...style.matchAll(/url\("([^"]+)"\) format\("truetype"\)/g)].map((m) => m[1]!);
    expect(fonts).toHaveLength(2);
    for (const font of fonts) {
      expect(font).toMatch(/^\/static\/noto-sans-(400|600)\.ttf\?v=[0-9a-f]{16}$/);
      const file = await t.app.inject(font);
      expect(file.statusCode).toBe(200);
      expect(file.headers['content-type']).toBe('font/ttf');
    }
  });
});

describe('error pages under a rate limit', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [entry('Only one', 1_700_000_000, VISIBLE)], env: { RATE_LIMIT_READ: '1/1m' } });
  });
  afterAll(() => t.close());

  it('answers 429 on a page as a page, with Retry-After', async () => {
    expect((await t.app.inject({ url: '/search', headers: { accept: BROWSER } })).statusCode).toBe(200);
    const res = await t.app.inject({ url: `/nonsense/${VISIBLE}`, headers: { accept: BROWSER } });
    expectErrorPage(res, 429, 'Too many requests');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.body).toMatch(/Too many requests from your address: at most 1 per 1 minute; try again in \d+ s\./);
    expectProblem(await t.app.inject({ url: `/api/v1/nonsense/${VISIBLE}`, headers: { accept: BROWSER } }), 429);
  });
});
