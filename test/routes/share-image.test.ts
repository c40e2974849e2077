import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CardCache } from '../../src/routes/api/share-image.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const plain = entry('A marrow of unusual size won the village fete again.', 1_700_000_100, 'bbbbbbbb-0000-4000-8000-000000000001');
const withVariables = entry('$AUTHOR$ saw a $ANIMAL$ eat $FOOD$ :toast:', 1_700_000_200, 'bbbbbbbb-0000-4000-8000-000000000002');
const hostile = entry('<script>alert("pwned")</script> & "quotes" \'too\'', 1_700_000_300, 'bbbbbbbb-0000-4000-8000-000000000003');
const hidden = entry('Hidden for a reason.', 1_700_000_400, 'bbbbbbbb-0000-4000-8000-000000000004');
const long = entry(`${'A very long entry about geese and ponds. '.repeat(12)}The end.`, 1_700_000_500, 'bbbbbbbb-0000-4000-8000-000000000005');

const png = (uuid: string) => `/api/v1/nonsense/${uuid}.png`;
const page = (uuid: string) => `/nonsense/${uuid}`;

function pngSize(body: Buffer): [number, number] {
  expect(body.subarray(1, 4).toString('latin1')).toBe('PNG');
  return [body.readUInt32BE(16), body.readUInt32BE(20)];
}

/** metaContent returns the content of `<meta property|name="key">`, unescaping the four escapes used. */
function metaContent(html: string, key: string): string | undefined {
  const match = new RegExp(`<meta (?:property|name)="${key.replaceAll(':', '\\:')}" content="([^"]*)">`).exec(html);
  return match?.[1]?.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

describe('share images and share pages', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ demo: true, entries: [plain, withVariables, hostile, hidden, long] });
    await setState(t.storage, hidden.uuid, 'hidden');
  });
  afterAll(() => t.close());

  describe('GET /api/v1/nonsense/<uuid>.png', () => {
    it('answers a 1200×630 PNG with a strong ETag and a day of caching', async () => {
      const res = await t.app.inject(png(plain.uuid));
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/png');
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
      expect(res.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(pngSize(res.rawPayload)).toEqual([1200, 630]);
    });

    it('answers 304 to a current If-None-Match', async () => {
      const { headers } = await t.app.inject(png(plain.uuid));
      const res = await t.app.inject({ url: png(plain.uuid), headers: { 'if-none-match': headers.etag as string } });
      expect(res.statusCode).toBe(304);
      expect(res.rawPayload.length).toBe(0);
      expect(res.headers.etag).toBe(headers.etag);
    });

    it('gives the same bytes every time, server variables included, and accepts any case', async () => {
      const first = await t.app.inject(png(withVariables.uuid));
      const second = await t.app.inject(png(withVariables.uuid.toUpperCase()));
      expect(first.statusCode).toBe(200);
      expect(second.headers.etag).toBe(first.headers.etag);
      expect(second.rawPayload.equals(first.rawPayload)).toBe(true);
      expect(first.headers.etag).not.toBe((await t.app.inject(png(plain.uuid))).headers.etag);
    });

    it('answers HEAD with the headers only', async () => {
      const res = await t.app.inject({ method: 'HEAD', url: png(plain.uuid) });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/png');
      expect(res.rawPayload.length).toBe(0);
    });

    it('answers 404 for hidden and unknown entries, 400 for a malformed UUID', async () => {
      for (const uuid of [hidden.uuid, '99999999-0000-4000-8000-000000000000']) {
        const res = await t.app.inject(png(uuid));
        expect(res.statusCode).toBe(404);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.json().detail).toContain(uuid);
      }
      const bad = await t.app.inject('/api/v1/nonsense/not-a-uuid.png');
      expect(bad.statusCode).toBe(400);
      expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/);
    });

    it('answers 404 for other image formats, saying that share images are PNG only', async () => {
      for (const ext of ['jpg', 'webp', 'svg', 'PNG', 'png.png']) {
        const res = await t.app.inject(`/api/v1/nonsense/${plain.uuid}.${ext}`);
        expect(res.statusCode).toBe(404);
        expect(res.json().detail).toContain('PNG only');
      }
    });

    it('is documented in the OpenAPI description of the by-UUID route', async () => {
      const doc = (await t.app.inject('/openapi.json')).json();
      expect(Object.keys(doc.paths['/api/v1/nonsense/{id}'].get.responses['200'].content)).toEqual(['application/json', 'image/png']);
    });

    it('still answers the entry as JSON without an extension', async () => {
      const res = await t.app.inject(`/api/v1/nonsense/${plain.uuid}`);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.json()).toEqual({ uuid: plain.uuid, nonsense: plain.text, timestamp: plain.timestamp });
    });
  });

  describe('GET /nonsense/<uuid>', () => {
    it('is an HTML page with Open Graph and Twitter card tags pointing at the absolute PNG', async () => {
      const res = await t.app.inject({ url: page(plain.uuid), headers: { host: 'nonsense.test:8080' } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      const html = res.body;
      const image = `http://nonsense.test:8080/api/v1/nonsense/${plain.uuid}.png`;
      expect(metaContent(html, 'og:title')).toBe('Nonsense Entry Service');
      expect(metaContent(html, 'og:description')).toBe(plain.text);
      expect(metaContent(html, 'og:image')).toBe(image);
      expect(metaContent(html, 'og:image:width')).toBe('1200');
      expect(metaContent(html, 'og:image:height')).toBe('630');
      expect(metaContent(html, 'og:image:type')).toBe('image/png');
      expect(metaContent(html, 'og:url')).toBe(`http://nonsense.test:8080/nonsense/${plain.uuid}`);
      expect(metaContent(html, 'twitter:card')).toBe('summary_large_image');
      expect(metaContent(html, 'twitter:image')).toBe(image);
      expect(html).toContain(`>${plain.text}</blockquote>`);
    });

    it('uses BASE_URL and APP_NAME when they are set', async () => {
      const t2 = await createTestApp({ entries: [plain], env: { BASE_URL: 'https://nonsense.example.org/', APP_NAME: 'Quirk Hub' } });
      try {
        const html = (await t2.app.inject(page(plain.uuid))).body;
        expect(metaContent(html, 'og:image')).toBe(`https://nonsense.example.org/api/v1/nonsense/${plain.uuid}.png`);
        expect(metaContent(html, 'og:title')).toBe('Quirk Hub');
      } finally {
        await t2.close();
      }
    });

    it('escapes the entry text everywhere', async () => {
      const html = (await t.app.inject(page(hostile.uuid))).body;
      expect(html).not.toContain('<script');
      expect(html).not.toContain('"pwned"');
      expect(html).toContain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;too&#39;');
      expect(metaContent(html, 'og:description')).toBe(hostile.text);
    });

    it('shows the card text: seeded server values, neutral words, custom emojis as same-origin images', async () => {
      const html = (await t.app.inject(page(withVariables.uuid))).body;
      const description = metaContent(html, 'og:description')!;
      expect(description).toMatch(/^someone saw a \w+ eat [\w ]+ :toast:$/);
      expect(metaContent((await t.app.inject(page(withVariables.uuid))).body, 'og:description')).toBe(description);
      expect(html).toContain('<img class="emoji" src="/api/v1/emojis/toast.png" alt=":toast:"');
    });

    it('cuts long texts to about 200 characters in the description', async () => {
      const description = metaContent((await t.app.inject(page(long.uuid))).body, 'og:description')!;
      expect([...description].length).toBeLessThanOrEqual(200);
      expect(description.endsWith('…')).toBe(true);
      expect(long.text.startsWith(description.slice(0, -1))).toBe(true);
    });

    it('sends a Content-Security-Policy that allows exactly its own style and nothing external', async () => {
      const res = await t.app.inject(page(plain.uuid));
      const csp = res.headers['content-security-policy'] as string;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("img-src 'self'");
      const style = /<style>([\s\S]*?)<\/style>/.exec(res.body)![1]!;
      expect(csp).toContain(`style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'`);
      expect(res.body).not.toMatch(/(src|href)="https?:\/\/(?!localhost)/);
    });

    it('answers 304 to a current If-None-Match', async () => {
      const { headers } = await t.app.inject(page(plain.uuid));
      expect(headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
      const res = await t.app.inject({ url: page(plain.uuid), headers: { 'if-none-match': headers.etag as string } });
      expect(res.statusCode).toBe(304);
    });

    it('answers problem+json: 404 hidden or unknown, 400 malformed', async () => {
      for (const [url, status] of [
        [page(hidden.uuid), 404],
        [page('99999999-0000-4000-8000-000000000000'), 404],
        [page('not-a-uuid'), 400],
        [page(`${plain.uuid}.html`), 400],
      ] as const) {
        const res = await t.app.inject(url);
        expect(res.statusCode).toBe(status);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    });
  });
});

describe('CardCache', () => {
  const bytes = (n: number) => Buffer.alloc(n, 1);

  it('renders each key once, also when asked concurrently', async () => {
    const cache = new CardCache();
    let renders = 0;
    const render = async () => {
      renders++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return bytes(10);
    };
    const [a, b] = await Promise.all([cache.get('k', render), cache.get('k', render)]);
    expect(a).toBe(b);
    await cache.get('k', render);
    expect(renders).toBe(1);
  });

  it('evicts the least recently used card by count and by bytes', async () => {
    const cache = new CardCache(2, 100);
    await cache.get('a', async () => bytes(10));
    await cache.get('b', async () => bytes(10));
    await cache.get('a', async () => bytes(10)); // a is now the most recent
    await cache.get('c', async () => bytes(10));
    let rendered = false;
    await cache.get('a', async () => ((rendered = true), bytes(10)));
    expect(rendered).toBe(false);
    await cache.get('b', async () => ((rendered = true), bytes(10)));
    expect(rendered).toBe(true);
    await cache.get('big', async () => bytes(95));
    expect(cache.size).toBe(1);
  });

  it('forgets failures, so the next request tries again', async () => {
    const cache = new CardCache();
    await expect(cache.get('k', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect((await cache.get('k', async () => bytes(3))).length).toBe(3);
  });

  it('runs at most `concurrency` renders at once', async () => {
    const cache = new CardCache(10, 1000, 2);
    let running = 0;
    let most = 0;
    const render = async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      return bytes(1);
    };
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((key) => cache.get(key, render)));
    expect(most).toBe(2);
  });
});
