/**
 * Conditional requests (RFC 9110 §13) on every route family with a validator: `If-None-Match` decides
 * whatever the request's `Cache-Control` and `Pragma` say, with the exact headers fetch() sends when a
 * script sets `If-None-Match` itself; weak comparison, lists and `*`; HEAD's 304 is GET's; the fast
 * lane answers as Fastify; `Last-Modified` and `If-Modified-Since` on emoji images, the one answer
 * with a modification time, and If-None-Match taking precedence over it.
 */
import http from 'node:http';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { etagMatches, modifiedSince } from '../../src/http/cache.ts';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { families } from '../galaxy/corpus.ts';
import { LANE_REVISION_AGE_MS, createTestApp, entry, type TestContext } from '../helper.ts';

const entries = families(4, 3).map((f, i) => entry(f.text, 1_700_000_000 + i, `bbbbbbbb-0000-4000-8000-${String(i).padStart(12, '0')}`));
const ONE = entries[0]!.uuid;
const EMOJI = 'dot';

/** What fetch() adds to a request whose script sets If-None-Match (the Fetch standard's "no-store" mode). */
const FETCH_REVALIDATION = { 'cache-control': 'no-cache', pragma: 'no-cache' };

/** Every route family with a validator, by sample URLs; each answers 200 with an ETag. */
const VALIDATED: Record<string, string[]> = {
  entries: ['/api/v1/nonsense/status', `/api/v1/nonsense/${ONE}`],
  reference: ['/api/v1/emojis', `/api/v1/emojis/${EMOJI}.png`, '/api/v1/variables'],
  export: ['/api/v1/nonsense', '/api/v1/nonsense?format=json', '/api/v1/nonsense?format=txt&q=cat'],
  galaxy: ['/api/v1/nonsense/galaxy', '/api/v1/nonsense/galaxy?format=json'],
  'share image and page': [`/api/v1/nonsense/${ONE}.png`, `/nonsense/${ONE}`],
  site: ['/galaxy', '/search?q=cat', '/admin', '/static/site.css', '/favicon.ico'],
  odata: [
    '/odata/v2/',
    '/odata/v2/$metadata',
    '/odata/v2/nonsense_list',
    '/odata/v2/nonsense_list?$format=json',
    `/odata/v2/nonsense_list(guid'${ONE}')`,
    '/odata/v2/nonsense_list/$count',
  ],
  docs: ['/docs/static/swagger-ui.css'],
};

/** Headers that differ between any two answers. */
const PER_ANSWER = new Set(['date', 'x-request-id', 'connection', 'keep-alive', 'transfer-encoding']);
const comparable = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !PER_ANSWER.has(name.toLowerCase())).sort(([a], [b]) => a.localeCompare(b)));

describe('the weak comparison of If-None-Match', () => {
  it('matches the same opaque tag, weak or strong on either side', () => {
    for (const [field, etag] of [
      ['W/"r5"', 'W/"r5"'],
      ['"r5"', 'W/"r5"'],
      ['W/"r5"', '"r5"'],
      ['"abc"', '"abc"'],
    ]) {
      expect(etagMatches(field!, etag!), `${field} ~ ${etag}`).toBe(true);
    }
    for (const [field, etag] of [
      ['W/"r5"', 'W/"r50"'],
      ['"r"', 'W/"r5"'],
      ['r5', 'W/"r5"'],
      ['w/"r5"', 'W/"r5"'],
      ['', '"abc"'],
      ['"ab', '"ab"'],
    ]) {
      expect(etagMatches(field!, etag!), `${field} !~ ${etag}`).toBe(false);
    }
  });

  it('takes lists, with or without spaces, and tags holding commas', () => {
    expect(etagMatches('"a", W/"r5", "b"', 'W/"r5"')).toBe(true);
    expect(etagMatches('"a",W/"r5"', 'W/"r5"')).toBe(true);
    expect(etagMatches('\t"a" ,  "b"', '"b"')).toBe(true);
    expect(etagMatches('"a,b", "c"', '"c"')).toBe(true);
    expect(etagMatches('"x,\\"c\\""', '"c"')).toBe(false);
    expect(etagMatches('"a", "b"', '"a,"')).toBe(false);
    // A member that is no entity tag is passed over, not the whole list.
    expect(etagMatches('junk, "c"', '"c"')).toBe(true);
    expect(etagMatches('"a", W/junk, "c"', '"c"')).toBe(true);
  });

  it('matches * with any tag', () => {
    expect(etagMatches('*', 'W/"r5"')).toBe(true);
    expect(etagMatches(' * ', '"x"')).toBe(true);
  });
});

describe('If-Modified-Since dates', () => {
  const stored = Date.UTC(1994, 10, 6, 8, 49, 37, 500);
  it('reads the three HTTP date forms, to the second', () => {
    for (const date of ['Sun, 06 Nov 1994 08:49:37 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994']) {
      expect(modifiedSince(date, stored), date).toBe(false);
    }
    expect(modifiedSince('Sun, 06 Nov 1994 08:49:36 GMT', stored)).toBe(true);
    expect(modifiedSince('Mon, 07 Nov 1994 00:00:00 GMT', stored)).toBe(false);
  });

  it('takes a value that is no date for no condition', () => {
    for (const date of ['yesterday', '', 'W/"r5"']) expect(modifiedSince(date, stored), date).toBe(true);
  });
});

describe('conditional requests', () => {
  let t: TestContext;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp({ entries, revisionMaxAgeMs: LANE_REVISION_AGE_MS });
    const image = await sharp({ create: { width: 4, height: 4, channels: 4, background: '#0ea5e9' } }).png().toBuffer();
    await t.storage.emojis.insertMissing([{ name: EMOJI, contentType: 'image/png', image }]);
    await new GalaxyComputer(t.database).run();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  }, 60_000);
  afterAll(() => t.close());

  const tagOf = async (url: string) => {
    const res = await t.app.inject(url);
    expect(res.statusCode, url).toBe(200);
    expect(res.headers.etag, url).toBeTypeOf('string');
    return res.headers.etag as string;
  };

  for (const [family, urls] of Object.entries(VALIDATED)) {
    it(`answers 304 to If-None-Match with fetch's no-cache headers: ${family}`, async () => {
      for (const url of urls) {
        const etag = await tagOf(url);
        const headers = { 'if-none-match': etag, ...FETCH_REVALIDATION };
        const get = await t.app.inject({ url, headers });
        expect(get.statusCode, url).toBe(304);
        expect(get.headers.etag, url).toBe(etag);
        expect(get.headers['cache-control'], url).toBeDefined();
        expect([get.body, get.headers['content-length'], get.headers['content-type']], url).toEqual(['', undefined, undefined]);
        // HEAD's 304 is GET's, to the header.
        const head = await t.app.inject({ method: 'HEAD', url, headers });
        expect(head.statusCode, url).toBe(304);
        expect(comparable(head.headers), url).toEqual(comparable(get.headers));
        // Any other tag gets the full answer.
        const other = await t.app.inject({ url, headers: { ...headers, 'if-none-match': '"another"' } });
        expect(other.statusCode, url).toBe(200);
      }
    });
  }

  it('answers 304 to the weak form of a strong tag, a list holding the tag, and *', async () => {
    for (const url of [`/api/v1/emojis/${EMOJI}.png`, `/api/v1/nonsense/${ONE}.png`, '/api/v1/nonsense/status']) {
      const etag = await tagOf(url);
      const opaque = etag.replace(/^W\//, '');
      for (const field of [`W/${opaque}`, opaque, `"stale", ${etag}`, `"a",${etag} , "b"`, '*']) {
        const res = await t.app.inject({ url, headers: { 'if-none-match': field, ...FETCH_REVALIDATION } });
        expect(res.statusCode, `${url} If-None-Match: ${field}`).toBe(304);
      }
    }
  });

  it('revalidates over a port as fetch() does it, in the fast lane and out of it', async () => {
    const served = vi.spyOn(t.app.fastLane, 'serve');
    try {
      const url = `${base}/api/v1/nonsense/${ONE}`;
      await expect.poll(async () => (await fetch(url)).status === 200 && served.mock.results.at(-1)?.value === true).toBe(true);
      const etag = (await fetch(url)).headers.get('etag')!;
      // fetch() itself adds Cache-Control and Pragma to this request.
      const lane = await fetch(url, { headers: { 'if-none-match': etag } });
      expect(lane.status).toBe(304);
      expect(served.mock.results.at(-1)?.value).toBe(true);
      const fastify = await t.app.inject({ url: `/api/v1/nonsense/${ONE}`, headers: { 'if-none-match': etag, ...FETCH_REVALIDATION } });
      expect(fastify.statusCode).toBe(304);
      expect(comparable(Object.fromEntries(lane.headers.entries()))).toEqual(comparable(fastify.headers));
      // The tag on a second field line of its own still counts: field lines form one list.
      const twice = await new Promise<number>((resolve, reject) => {
        const request = http.get(url, { headers: { 'If-None-Match': ['"stale"', `"x", ${etag}`], 'Cache-Control': 'no-cache' } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        request.on('error', reject);
      });
      expect(twice).toBe(304);
      expect(served.mock.results.at(-1)?.value).toBe(true);
      // Out of the lane (a query string): the same.
      expect((await fetch(`${url}?x=1`, { headers: { 'if-none-match': etag } })).status).toBe(304);
      expect(served.mock.results.at(-1)?.value).toBe(false);
      for (const other of ['/api/v1/nonsense/status', '/api/v1/nonsense?format=json', '/odata/v2/nonsense_list', '/api/v1/nonsense/galaxy']) {
        const tag = (await fetch(`${base}${other}`)).headers.get('etag')!;
        expect((await fetch(`${base}${other}`, { headers: { 'if-none-match': tag } })).status, other).toBe(304);
      }
    } finally {
      served.mockRestore();
    }
  });

  describe('Last-Modified and If-Modified-Since', () => {
    const image = `/api/v1/emojis/${EMOJI}.png`;

    it('dates emoji images by when they were stored', async () => {
      const stored = await t.storage.emojis.find(EMOJI);
      const res = await t.app.inject(image);
      expect(res.headers['last-modified']).toBe(new Date(stored!.updatedAt).toUTCString());
    });

    it('answers If-Modified-Since by the date, and If-None-Match before it', async () => {
      const res = await t.app.inject(image);
      const modified = res.headers['last-modified'] as string;
      const etag = res.headers.etag as string;
      const earlier = new Date(Date.parse(modified) - 1000).toUTCString();
      const cases: [Record<string, string>, number][] = [
        [{ 'if-modified-since': modified }, 304],
        [{ 'if-modified-since': new Date().toUTCString() }, 304],
        [{ 'if-modified-since': earlier }, 200],
        [{ 'if-modified-since': 'not a date' }, 200],
        // If-None-Match decides when both are sent.
        [{ 'if-none-match': '"another"', 'if-modified-since': modified }, 200],
        [{ 'if-none-match': etag, 'if-modified-since': earlier }, 304],
      ];
      for (const [headers, status] of cases) {
        const answer = await t.app.inject({ url: image, headers: { ...headers, ...FETCH_REVALIDATION } });
        expect(answer.statusCode, JSON.stringify(headers)).toBe(status);
        expect(answer.headers['last-modified']).toBe(modified);
      }
    });

    it('gives a replaced image a later date', async () => {
      const before = (await t.app.inject(image)).headers['last-modified'] as string;
      const replacement = await sharp({ create: { width: 4, height: 4, channels: 4, background: '#f59e0b' } }).png().toBuffer();
      // Replaced a second later (the header's precision): only the clock has to move on.
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
      try {
        vi.setSystemTime(Date.now() + 1100);
        await t.storage.emojis.put(EMOJI, 'image/png', replacement, 'test');
        const after = await t.app.inject({ url: image, headers: { 'if-modified-since': before } });
        expect(after.statusCode).toBe(200);
        expect(Date.parse(after.headers['last-modified'] as string)).toBeGreaterThan(Date.parse(before));
      } finally {
        vi.useRealTimers();
      }
    });

    it('has no date on answers without a modification time of their own, and ignores If-Modified-Since there', async () => {
      const future = new Date(Date.now() + 86_400_000).toUTCString();
      for (const url of ['/api/v1/nonsense/status', `/api/v1/nonsense/${ONE}`, `/api/v1/nonsense/${ONE}.png`, '/api/v1/nonsense/galaxy', '/api/v1/nonsense', '/static/site.css']) {
        const res = await t.app.inject({ url, headers: { 'if-modified-since': future } });
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['last-modified'], url).toBeUndefined();
      }
    });
  });
});
