/**
 * The site's faces for other scripts: site.css declares each with a unicode-range that covers its
 * script (so a page fetches it only for text in that script), puts it in the font stack, and the
 * service serves every file the stylesheet names, as a font, from itself (the page's
 * Content-Security-Policy allows fonts from 'self' only), revalidated by its ETag like every static file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';

/** A letter of each script, and the family that must draw it. */
const SCRIPTS: ReadonlyArray<[family: string, sample: string]> = [
  ['Noto Sans Arabic', 'ش'],
  ['Noto Sans Hebrew', 'ש'],
  ['Noto Sans Devanagari', 'क'],
  ['Noto Sans Thai', 'ก'],
  ['Noto Sans JP', 'あ'],
  ['Noto Sans KR', '한'],
  ['Noto Sans SC', '中'],
  ['Noto Sans TC', '臺'],
];

interface Face {
  family: string;
  weight: string;
  urls: string[];
  ranges: Array<[number, number]>;
}

/** faces reads the @font-face rules of a stylesheet. */
function faces(css: string): Face[] {
  return [...css.matchAll(/@font-face\s*\{([^}]*)\}/g)].map(([, body]) => {
    const value = (name: string) => new RegExp(`(?:^|;)\\s*${name}:\\s*([^;]+)`).exec(body!)?.[1]?.trim() ?? '';
    const ranges = value('unicode-range')
      .split(',')
      .filter((part) => part.trim() !== '')
      .map((part) => {
        const [from, to] = part.trim().replace(/^U\+/i, '').split('-');
        return [parseInt(from!, 16), parseInt(to ?? from!, 16)] as [number, number];
      });
    return {
      family: value('font-family').replace(/"/g, ''),
      weight: value('font-weight'),
      urls: [...value('src').matchAll(/url\("([^"]+)"\)/g)].map((match) => match[1]!),
      ranges,
    };
  });
}

describe('the faces of other scripts', () => {
  let t: TestContext;
  let css: string;
  beforeAll(async () => {
    t = await createTestApp();
    const res = await t.app.inject('/static/site.css');
    expect(res.statusCode).toBe(200);
    css = res.body;
  });
  afterAll(() => t.close());

  it('are declared for every script with a unicode-range covering it, in both weights, and in the font stack', () => {
    const declared = faces(css);
    const stack = /--font:\s*([^;]+);/.exec(css)?.[1] ?? '';
    for (const [family, sample] of SCRIPTS) {
      const own = declared.filter((face) => face.family === family);
      expect(own.map((face) => face.weight).sort(), family).toEqual(['400', '600']);
      const code = sample.codePointAt(0)!;
      for (const face of own) {
        expect(face.urls, family).toHaveLength(1);
        expect(face.ranges.length, `${family} has a unicode-range`).toBeGreaterThan(0);
        expect(face.ranges.some(([from, to]) => from <= code && code <= to), `${family} covers ${sample}`).toBe(true);
        // Latin text never fetches it.
        expect(face.ranges.some(([from]) => from < 0x0370), `${family} leaves Latin alone`).toBe(false);
      }
      expect(stack, family).toContain(`"${family}"`);
    }
  });

  it('are served by the service as fonts, every file the stylesheet names, with an ETag that revalidates', async () => {
    const urls = [...new Set(faces(css).flatMap((face) => face.urls))];
    expect(urls.length).toBe(2 + 2 * SCRIPTS.length);
    for (const url of urls) {
      expect(url, 'from the service itself').toMatch(/^\/static\//);
      const res = await t.app.inject(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toMatch(/^font\//);
      expect(Number(res.headers['content-length']), url).toBe(res.rawPayload.length);
      // A TrueType font: its first four bytes are the version 1.0.
      expect(res.rawPayload.subarray(0, 4).toString('hex'), url).toBe('00010000');
      const etag = res.headers.etag as string;
      expect(etag, url).toMatch(/^"[0-9a-f]{16}"$/);
      expect(res.headers['cache-control'], url).toBe('public, max-age=300, must-revalidate');
      expect((await t.app.inject({ url, headers: { 'if-none-match': etag } })).statusCode, url).toBe(304);
      const versioned = await t.app.inject({ method: 'HEAD', url: `${url}?v=${etag.slice(1, -1)}` });
      expect(versioned.statusCode, url).toBe(200);
      expect(versioned.headers['cache-control'], url).toBe('public, max-age=31536000, immutable');
      expect(versioned.headers['content-length'], url).toBe(res.headers['content-length']);
    }
    // Which the pages may load: their policy allows fonts from the service itself.
    expect((await t.app.inject('/search')).headers['content-security-policy']).toMatch(/font-src 'self'/);
  });
});
