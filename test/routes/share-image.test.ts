import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareImageCache, shareImageCancelled } from '../../src/metrics/registry.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';
import { startService } from '../process-helper.ts';

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

    it('is documented in the OpenAPI description as its own path', async () => {
      const doc = (await t.app.inject('/openapi.json')).json();
      expect(Object.keys(doc.paths['/api/v1/nonsense/{id}.png'].get.responses['200'].content)).toEqual(['image/png']);
      expect(Object.keys(doc.paths['/api/v1/nonsense/{id}'].get.responses['200'].content)).toEqual(['application/json']);
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
      expect(description).toMatch(/^Someone saw a \w+ eat [\w ]+ :toast:$/);
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

async function counter(metric: typeof shareImageCache | typeof shareImageCancelled, label?: string): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => label === undefined || v.labels.result === label).reduce((sum, v) => sum + v.value, 0);
}

describe('share images: rendering off the event loop', () => {
  const fresh = (n: number, text = `Card number ${n} of the render tests.`) => entry(text, 1_700_001_000 + n, `dddddddd-0000-4000-8000-${String(n).padStart(12, '0')}`);
  const cards = Array.from({ length: 6 }, (_, i) => fresh(i + 1));
  const longest = fresh(50, 'The committee of geese met at dawn to discuss the pond, the weather, and the bread. '.repeat(24).slice(0, 2000).trim());
  const arabic = fresh(51, 'اجتمعت لجنة الإوز عند الفجر.');
  const webp = fresh(52, 'Breakfast: :wavy:');
  const sameAsPng = fresh(53, 'Breakfast: :flat:');
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [...cards, longest, arabic, webp, sameAsPng] });
    const toast = fs.readFileSync(path.join(import.meta.dirname, '../../demo/emojis/toast.png'));
    // Stored as WebP, as older versions of the service kept uploads: converted when a card is drawn.
    await t.storage.emojis.put('wavy', 'image/webp', await sharp(toast).webp({ lossless: true }).toBuffer(), 'test');
    await t.storage.emojis.put('flat', 'image/png', toast, 'test');
  });
  afterAll(() => t.close());

  it('answers HEAD of a card never drawn with its length, drawing it once for the HEAD and the GET after it', async () => {
    const misses = await counter(shareImageCache, 'miss');
    for (const card of cards.slice(0, 3)) {
      const res = await t.app.inject({ method: 'HEAD', url: png(card.uuid) });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/png');
      expect(res.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(Number(res.headers['content-length'])).toBeGreaterThan(1000);
      expect(res.rawPayload.length).toBe(0);
    }
    expect(await counter(shareImageCache, 'miss')).toBe(misses + 3);
    expect(t.cards.stats.cacheCards).toBe(3);
    const head = await t.app.inject({ method: 'HEAD', url: png(cards[0]!.uuid) });
    const got = await t.app.inject(png(cards[0]!.uuid));
    expect(head.headers['content-length']).toBe(String(got.rawPayload.length));
    expect(head.headers.etag).toBe(got.headers.etag);
    expect(await counter(shareImageCache, 'miss')).toBe(misses + 3);
  });

  it('draws an Arabic card right to left and a WebP emoji like the same image as PNG', async () => {
    const rtl = await t.app.inject(png(arabic.uuid));
    expect(rtl.statusCode).toBe(200);
    const [fromWebp, fromPng] = await Promise.all([webp, sameAsPng].map(async (e) => (await t.app.inject(png(e.uuid))).rawPayload));
    const raw = async (image: Buffer) => (await sharp(image).raw().toBuffer()).toString('base64');
    // Only the emoji differs between the two texts' inputs, and both images are the same pixels.
    expect(await raw(fromWebp!)).toBe(await raw(fromPng!));
  });

  it('reports the card cache in /metrics', async () => {
    await t.app.inject(png(cards[1]!.uuid));
    const metrics = (await t.app.inject('/metrics')).body;
    const bytes = Number(/^nonsense_share_image_cache_bytes (\d+)$/m.exec(metrics)?.[1]);
    expect(bytes).toBeGreaterThanOrEqual(t.cards.stats.cacheBytes);
    expect(t.cards.stats.cacheBytes).toBeGreaterThan(10_000);
    expect(metrics).toMatch(/^nonsense_share_image_cache_cards \d+$/m);
    expect(metrics).toMatch(/^nonsense_share_image_renders_waiting \d+$/m);
  });

  it('draws new cards off the event loop: it stays mostly idle while eight render', async () => {
    const batch = Array.from({ length: 8 }, (_, i) => fresh(60 + i, `Event loop test card ${i}: the geese keep their own counsel.`));
    await t.storage.entries.insertEntries(batch);
    await t.app.inject(png(cards[5]!.uuid)); // the worker is up and warm
    const before = performance.eventLoopUtilization();
    const responses = await Promise.all(batch.map((e) => t.app.inject(png(e.uuid))));
    const busy = performance.eventLoopUtilization(before);
    expect(responses.every((r) => r.statusCode === 200)).toBe(true);
    // Drawn on the event loop, eight cards keep it busy nearly all the time (utilisation near 1).
    expect(busy.utilization).toBeLessThan(0.5);
  });

  it('stops drawing a card whose client hung up', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as { port: number };
    const cancelled = await counter(shareImageCancelled);
    const request = http.get({ host: '127.0.0.1', port, path: png(longest.uuid) });
    request.on('error', () => {});
    await expect.poll(() => t.cards.stats.running, { interval: 2 }).toBe(1);
    request.destroy();
    await expect.poll(() => counter(shareImageCancelled)).toBe(cancelled + 1);
    await expect.poll(() => t.cards.stats.running).toBe(0);
    const card = await t.cards.describe(t.storage, (await t.storage.entries.findVisible(longest.uuid))!);
    expect(t.cards.cached(card)).toBeUndefined();
  });
});

describe('share images: a full render queue', () => {
  let t: TestContext;
  const many = Array.from({ length: 4 }, (_, i) => entry(`Queue test card ${i}.`, 1_700_002_000 + i, `eeeeeeee-0000-4000-8000-${String(i).padStart(12, '0')}`));
  beforeAll(async () => {
    t = await createTestApp({ entries: many, env: { CARD_RENDER_THREADS: '1', CARD_RENDER_QUEUE: '1' } });
  });
  afterAll(() => t.close());

  it('answers 503 problem+json with Retry-After beyond the queue, and draws the rest', async () => {
    const responses = await Promise.all(many.map((e) => t.app.inject(png(e.uuid))));
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 200, 503, 503]);
    for (const res of responses.filter((r) => r.statusCode === 503)) {
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.etag).toBeUndefined();
      expect(res.json().detail).toMatch(/try again/);
    }
  });
});

describe('share images from the compiled service', () => {
  it('draws cards in dist/\'s render worker, and the process exits cleanly after its worker used sharp', async () => {
    const t = await createTestApp({ entries: [entry('Drawn by the compiled worker. 鹅 and مرحبا too.', 1_700_003_000, 'ffffffff-0000-4000-8000-000000000001')] });
    const service = await startService({ DATABASE_URL: t.config.database.engine === 'postgres' ? t.config.database.url : t.config.database.file });
    try {
      const res = await fetch(`${service.base}${png('ffffffff-0000-4000-8000-000000000001')}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect((await sharp(Buffer.from(await res.arrayBuffer())).metadata()).width).toBe(1200);
    } finally {
      const { code, signal } = await service.stop('SIGTERM');
      expect({ code, signal, output: service.output() }).toEqual({ code: 0, signal: null, output: '' });
      await t.close();
    }
    // A process start, a worker start and the fonts: slow on a busy machine.
  }, 60_000);
});
