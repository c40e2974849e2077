/**
 * HEAD is GET without the body, on every GET route of the app, over a real port (where the fast lane
 * answers and where chunked answers are told from answers with a length): the same status (never a
 * 5xx), the same headers, the GET's Content-Length where the GET sends one and none where the GET
 * streams. The routes come from the app itself (an onRoute hook on every Fastify instance the app
 * creates); each GET route needs samples in SAMPLES, so a new route without them fails this test.
 */
import http from 'node:http';
import type * as FastifyModule from 'fastify';
import type { RouteOptions } from 'fastify';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { shareImageCache } from '../../src/metrics/registry.ts';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { ASSETS } from '../../src/web/assets.ts';
import { families } from '../galaxy/corpus.ts';
import { LANE_REVISION_AGE_MS, createTestApp, entry, type TestContext } from '../helper.ts';

/** The routes added to each Fastify instance, by instance. */
const routesOf = vi.hoisted(() => new WeakMap<object, RouteOptions[]>());

vi.mock('fastify', async (importOriginal) => {
  const actual = await importOriginal<typeof FastifyModule>();
  const original = actual.default;
  const collecting = ((options?: Parameters<typeof original>[0]) => {
    const app = original(options);
    const routes: RouteOptions[] = [];
    routesOf.set(app, routes);
    app.addHook('onRoute', (route) => {
      routes.push(route);
    });
    return app;
  }) as typeof original;
  return { ...actual, default: Object.assign(collecting, original) };
});

// Texts of one length and one timestamp: every entry's JSON, page and export line has the same length,
// so the random entry's GET and HEAD, which pick different entries, still have one Content-Length.
const texts = families(12, 3).map((f) => f.text);
const LENGTH = Math.max(...texts.map((text) => text.length)) + 1;
const entries = texts.map((text, i) => entry(text.padEnd(LENGTH, '.'), 1_700_000_000, `aaaaaaaa-0000-4000-8000-${String(i).padStart(12, '0')}`));
const ONE = entries[0]!.uuid;
const UNKNOWN = 'ffffffff-0000-4000-8000-000000000000';
const EMOJI = 'square';

interface Sample {
  url: string;
  headers?: Record<string, string>;
  /** Why this answer's body, and so its length, is not the same for GET and HEAD. */
  lengthDiffers?: string;
}

/** Concrete requests for every GET route pattern of the app. */
function samples(token: string): Record<string, (string | Sample)[]> {
  const admin = (url: string): (string | Sample)[] => [url, { url, headers: { authorization: `Bearer ${token}` } }];
  return {
    '/': ['/'],
    '/metrics': [{ url: '/metrics', lengthDiffers: 'its counters count the GET' }],
    '/openapi.json': ['/openapi.json'],
    '/healthz': ['/healthz'],
    '/readyz': ['/readyz'],
    '/docs': ['/docs'],
    '/docs/*': ['/docs/', '/docs/json', '/docs/static/index.html', '/docs/static/swagger-ui.css', '/docs/nothing-here'],
    '/odata/v2': ['/odata/v2', '/odata/v2/', '/odata/v2/?$format=json'],
    '/odata/v2/*': [
      '/odata/v2/$metadata',
      '/odata/v2/nonsense_list',
      '/odata/v2/nonsense_list?$format=json',
      '/odata/v2/nonsense_list?all=true',
      '/odata/v2/nonsense_list?$inlinecount=allpages&$top=5',
      `/odata/v2/nonsense_list(guid'${ONE}')`,
      `/odata/v2/nonsense_list(guid'${ONE}')?$format=json`,
      `/odata/v2/nonsense_list(guid'${UNKNOWN}')`,
      '/odata/v2/nonsense_list/$count',
      '/odata/v2/nonsense_list?$filter=nonsense',
      '/odata/v2/nothing',
    ],
    '/nonsense/:id': [`/nonsense/${ONE}`, `/nonsense/${UNKNOWN}`, '/nonsense/not-a-uuid'],
    '/nonsense/:id/report': [`/nonsense/${ONE}/report`, `/nonsense/${ONE}/report?sent=1`],
    '/static/:file': ['/static/site.css', `/static/site.css?v=${ASSETS.get('site.css')!.hash}`, '/static/icon.svg', '/static/nothing.css'],
    '/search': ['/search', '/search?q=cat', '/search?after=not-a-date'],
    '/favicon.ico': ['/favicon.ico'],
    '/galaxy': ['/galaxy'],
    '/admin': ['/admin'],
    '/api/v1/nonsense': ['/api/v1/nonsense', '/api/v1/nonsense?format=json', '/api/v1/nonsense?format=txt', '/api/v1/nonsense?q=cat&format=csv', '/api/v1/nonsense?format=xml'],
    '/api/v1/nonsense/random': ['/api/v1/nonsense/random'],
    '/api/v1/nonsense/report': [{ url: '/api/v1/nonsense/report', lengthDiffers: "the 405's detail names the method" }],
    '/api/v1/nonsense/status': ['/api/v1/nonsense/status'],
    '/api/v1/nonsense/changes': ['/api/v1/nonsense/changes?since=0', '/api/v1/nonsense/changes?since=0&limit=1', '/api/v1/nonsense/changes?since=999999999'],
    // A live stream never ends; its HEAD is checked on its own below.
    '/api/v1/nonsense/events': ['/api/v1/nonsense/events?since=x', '/api/v1/nonsense/events?since=999999999'],
    '/api/v1/nonsense/galaxy': ['/api/v1/nonsense/galaxy', '/api/v1/nonsense/galaxy?format=csv', '/api/v1/nonsense/galaxy?format=json', '/api/v1/nonsense/galaxy?format=xml'],
    '/api/v1/nonsense/:id.png': [`/api/v1/nonsense/${ONE}.png`, `/api/v1/nonsense/${UNKNOWN}.png`],
    '/api/v1/nonsense/:id': [`/api/v1/nonsense/${ONE}`, `/api/v1/nonsense/${ONE.toUpperCase()}`, `/api/v1/nonsense/${ONE}?x=1`, `/api/v1/nonsense/${UNKNOWN}`, '/api/v1/nonsense/nope', `/api/v1/nonsense/${ONE}.jpg`],
    '/api/v1/emojis': ['/api/v1/emojis'],
    '/api/v1/emojis/:file': [`/api/v1/emojis/${EMOJI}.png`, `/api/v1/emojis/${EMOJI}.gif`, '/api/v1/emojis/nothing.png'],
    '/api/v1/variables': ['/api/v1/variables'],
    '/api/v1/admin/nonsense': admin('/api/v1/admin/nonsense?limit=5'),
    '/api/v1/admin/nonsense/:uuid': admin(`/api/v1/admin/nonsense/${ONE}`),
    '/api/v1/admin/reports': admin('/api/v1/admin/reports'),
    '/api/v1/admin/log': admin('/api/v1/admin/log'),
  };
}

/** Headers that differ between any two answers, and the framing of the body, compared on their own. */
const PER_ANSWER = new Set(['date', 'x-request-id', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: number;
}

function comparable(headers: http.IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers)
      .filter(([name]) => !PER_ANSWER.has(name))
      .map(([name, value]) => [name, String(value)])
      .sort(([a], [b]) => a!.localeCompare(b!)),
  );
}

describe('HEAD on every GET route', () => {
  let t: TestContext;
  let port: number;
  let token: string;

  const send = (method: 'GET' | 'HEAD', url: string, headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, method, path: url, headers, agent: false }, (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, bytes }));
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end();
    });

  const renders = async () => (await shareImageCache.get()).values.filter((v) => v.labels.result === 'miss').reduce((sum, v) => sum + v.value, 0);

  beforeAll(async () => {
    t = await createTestApp({ entries, revisionMaxAgeMs: LANE_REVISION_AGE_MS });
    token = (await t.storage.tokens.create('head'))!;
    const image = await sharp({ create: { width: 8, height: 8, channels: 4, background: '#e11d48' } }).png().toBuffer();
    await t.storage.emojis.insertMissing([{ name: EMOJI, contentType: 'image/png', image }]);
    await new GalaxyComputer(t.database).run();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  }, 60_000);
  afterAll(() => t.close());

  it('has samples for exactly the GET routes of the app', () => {
    const routes = routesOf.get(t.app);
    expect(routes, 'no routes were collected from the app').toBeDefined();
    const gets = [...new Set(routes!.filter((route) => ([] as string[]).concat(route.method).includes('GET')).map((route) => route.url))].sort();
    expect(gets.length).toBeGreaterThan(20);
    expect(Object.keys(samples(token)).sort(), 'every GET route needs samples in SAMPLES of this file, and only those').toEqual(gets);
  });

  it('answers HEAD with the status and headers of GET, the same Content-Length or none where GET streams', async () => {
    const checked: string[] = [];
    for (const [pattern, list] of Object.entries(samples(token))) {
      for (const item of list) {
        const sample = typeof item === 'string' ? { url: item } : item;
        const what = `${pattern}: HEAD ${sample.url}${sample.headers ? ' (signed in)' : ''}`;
        // HEAD first: it must not lean on anything its GET would have prepared.
        const head = await send('HEAD', sample.url, sample.headers);
        const get = await send('GET', sample.url, sample.headers);
        expect(head.status, what).toBeLessThan(500);
        expect(head.status, what).toBe(get.status);
        expect(head.bytes, what).toBe(0);
        expect(comparable(head.headers), what).toEqual(comparable(get.headers));
        if (get.headers['transfer-encoding'] === 'chunked') {
          expect(get.headers['content-length'], what).toBeUndefined();
          expect(head.headers['content-length'], what).toBeUndefined();
        } else {
          expect(get.headers['content-length'], what).toBe(String(get.bytes));
          if (sample.lengthDiffers !== undefined) expect(Number(head.headers['content-length']), what).toBeGreaterThan(0);
          else expect(head.headers['content-length'], what).toBe(get.headers['content-length']);
        }
        checked.push(`${get.status} ${get.headers['transfer-encoding'] === 'chunked' ? 'chunked' : 'length'} ${what}`);
      }
    }
    // The samples reach both kinds of answer, and the formats that stream.
    expect(checked.filter((line) => line.startsWith('200 chunked')).length).toBeGreaterThanOrEqual(6);
    expect(checked.filter((line) => line.startsWith('200 length')).length).toBeGreaterThan(30);
  });

  it('answers HEAD of a live event stream with the headers of its GET and no length, and ends', async () => {
    const head = await send('HEAD', '/api/v1/nonsense/events');
    const get = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, path: '/api/v1/nonsense/events', agent: false }, (response) => {
        resolve(response);
        request.destroy();
      });
      request.on('error', reject);
      request.end();
    });
    expect(head.status).toBe(200);
    expect(get.statusCode).toBe(200);
    expect(comparable(head.headers)).toEqual(comparable(get.headers));
    expect(get.headers['transfer-encoding']).toBe('chunked');
    expect(head.headers['content-length']).toBeUndefined();
    expect(head.bytes).toBe(0);
  });

  it('draws a share card once for a HEAD and the GET after it', async () => {
    const uuid = entries[1]!.uuid;
    const before = await renders();
    const head = await send('HEAD', `/api/v1/nonsense/${uuid}.png`);
    expect(head.status).toBe(200);
    expect(await renders()).toBe(before + 1);
    const get = await send('GET', `/api/v1/nonsense/${uuid}.png`);
    expect(head.headers['content-length']).toBe(String(get.bytes));
    expect(await renders()).toBe(before + 1);
  });

  it('answers HEAD of a lane read (random, by UUID) as the lane answers its GET', async () => {
    const served = vi.spyOn(t.app.fastLane, 'serve');
    try {
      for (const url of ['/api/v1/nonsense/random', `/api/v1/nonsense/${ONE}`]) {
        // The lane answers once the entry snapshot is current.
        await expect.poll(async () => (await send('GET', url)).status === 200 && served.mock.results.at(-1)?.value === true).toBe(true);
        const get = await send('GET', url);
        const head = await send('HEAD', url);
        expect([head.status, head.bytes]).toEqual([200, 0]);
        expect(comparable(head.headers)).toEqual(comparable(get.headers));
        expect(head.headers['content-length']).toBe(get.headers['content-length']);
      }
    } finally {
      served.mockRestore();
    }
  });
});
