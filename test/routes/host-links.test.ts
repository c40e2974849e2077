/**
 * Answers with absolute links built from the request (src/plugins/links.ts): with BASE_URL unset,
 * the share page, the OData service document, feeds and entities, /openapi.json, the reference's
 * document and the emoji list follow the Host header, say so with `Vary: Host` (and the proxy's
 * headers where TRUST_PROXY lets them count), and carry ETags that differ between hosts, so no cache
 * gives one host's links to another. With BASE_URL set, links follow it and nothing varies by host.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.ts';
import { absoluteBase } from '../../src/plugins/links.ts';
import { createTestApp, type TestContext } from '../helper.ts';

const BASE_URL = 'https://nonsense.example.org';

/** A route with links, and where in its answer the base shows: `link(body, base)` tells whether the body links to `base`. */
interface LinkedRoute {
  name: string;
  url: (uuid: string) => string;
  link: (body: string, base: string) => boolean;
}

const ROUTES: LinkedRoute[] = [
  {
    name: 'share page',
    url: (uuid) => `/nonsense/${uuid}`,
    link: (body, base) => body.includes(`<meta property="og:image" content="${base}/api/v1/nonsense/`) && body.includes(`<link rel="canonical" href="${base}/nonsense/`),
  },
  { name: 'OData service document', url: () => '/odata/v2/', link: (body, base) => body.includes(`xml:base="${base}/odata/v2/"`) },
  { name: 'OData feed', url: () => '/odata/v2/nonsense_list?$top=2', link: (body, base) => body.includes(`xml:base="${base}/odata/v2/"`) },
  { name: 'OData feed, JSON', url: () => '/odata/v2/nonsense_list?$top=2&$format=json', link: (body, base) => body.includes(`"uri":"${base}/odata/v2/nonsense_list(guid'`) },
  { name: 'OData entity', url: (uuid) => `/odata/v2/nonsense_list(guid'${uuid}')`, link: (body, base) => body.includes(`<id>${base}/odata/v2/nonsense_list(guid&apos;`) },
  {
    name: 'OData entity, JSON',
    url: (uuid) => `/odata/v2/nonsense_list(guid'${uuid}')?$format=json`,
    link: (body, base) => body.includes(`"uri":"${base}/odata/v2/nonsense_list(guid'`),
  },
  { name: 'OpenAPI document', url: () => '/openapi.json', link: (body, base) => (JSON.parse(body) as { servers: { url: string }[] }).servers[0]!.url === base },
  { name: "the reference's document", url: () => '/docs/json', link: (body, base) => (JSON.parse(body) as { servers: { url: string }[] }).servers[0]!.url === base },
  {
    name: 'emoji list',
    url: () => '/api/v1/emojis',
    link: (body, base) => {
      const emojis = JSON.parse(body) as { url: string }[];
      return emojis.length > 0 && emojis.every((emoji) => emoji.url.startsWith(`${base}/api/v1/emojis/`));
    },
  },
];

const varies = (headers: Record<string, unknown>) => String(headers.vary ?? '').split(',').map((name) => name.trim().toLowerCase());

describe('links built from the request', () => {
  let t: TestContext;
  let uuid: string;
  beforeAll(async () => {
    t = await createTestApp({ demo: true });
    uuid = (await t.app.inject('/api/v1/nonsense/random')).json<{ uuid: string }>().uuid;
  });
  afterAll(() => t.close());

  for (const route of ROUTES) {
    it(`${route.name}: follows the Host, varies by it, and tags each host's answer apart`, async () => {
      const url = route.url(uuid);
      const one = await t.app.inject({ url, headers: { host: 'one.test' } });
      const two = await t.app.inject({ url, headers: { host: 'two.test:8443' } });
      for (const [res, base] of [[one, 'http://one.test'], [two, 'http://two.test:8443']] as const) {
        expect(res.statusCode, res.body).toBe(200);
        expect(varies(res.headers)).toContain('host');
        expect(route.link(res.body, base), res.body.slice(0, 400)).toBe(true);
      }
      expect(one.body).not.toContain('two.test');
      if (one.headers.etag !== undefined) {
        expect(two.headers.etag).not.toBe(one.headers.etag);
        // A copy made for one host is not current for the other.
        const other = await t.app.inject({ url, headers: { host: 'two.test:8443', 'if-none-match': String(one.headers.etag) } });
        expect(other.statusCode).toBe(200);
        const same = await t.app.inject({ url, headers: { host: 'one.test', 'if-none-match': String(one.headers.etag) } });
        expect(same.statusCode).toBe(304);
        expect(varies(same.headers)).toContain('host');
      }
    });
  }

  it('keeps the Vary the answer had, adding Host once', async () => {
    const app = Fastify();
    app.decorate('config', { baseUrl: null, trustProxy: false, host: '127.0.0.1', port: 8080 } as unknown as Config);
    app.get('/', (request, reply) => {
      reply.header('vary', 'Origin, accept');
      absoluteBase(request, reply);
      absoluteBase(request, reply);
      return reply.send(absoluteBase(request, reply));
    });
    app.get('/any', (request, reply) => {
      reply.header('vary', '*');
      return reply.send(absoluteBase(request, reply));
    });
    const res = await app.inject({ url: '/', headers: { host: 'one.test' } });
    expect(res.headers.vary).toBe('Origin, accept, Host');
    expect(res.body).toBe('http://one.test');
    expect((await app.inject('/any')).headers.vary).toBe('*');
    await app.close();
  });
});

describe('links behind a trusted proxy, with BASE_URL unset', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ demo: true, env: { TRUST_PROXY: 'true' } });
  });
  afterAll(() => t.close());

  it("follow the proxy's X-Forwarded-Host and -Proto, and vary by them", async () => {
    const res = await t.app.inject({ url: '/api/v1/emojis', headers: { host: 'internal:8080', 'x-forwarded-host': 'public.test', 'x-forwarded-proto': 'https' } });
    expect(res.json<{ url: string }[]>()[0]!.url).toMatch(/^https:\/\/public\.test\/api\/v1\/emojis\//);
    expect(varies(res.headers)).toEqual(expect.arrayContaining(['host', 'x-forwarded-host', 'x-forwarded-proto']));
    const plain = await t.app.inject({ url: '/api/v1/emojis', headers: { host: 'internal:8080' } });
    expect(plain.headers.etag).not.toBe(res.headers.etag);
  });

  it('take no scheme but http and https from X-Forwarded-Proto', async () => {
    const res = await t.app.inject({ url: '/openapi.json', headers: { host: 'public.test', 'x-forwarded-proto': 'javascript' } });
    expect(res.json<{ servers: { url: string }[] }>().servers[0]!.url).toBe('http://public.test');
  });
});

describe('links with BASE_URL set', () => {
  let t: TestContext;
  let uuid: string;
  beforeAll(async () => {
    t = await createTestApp({ demo: true, env: { BASE_URL } });
    uuid = (await t.app.inject('/api/v1/nonsense/random')).json<{ uuid: string }>().uuid;
  });
  afterAll(() => t.close());

  for (const route of ROUTES) {
    it(`${route.name}: follows BASE_URL whatever the Host, and does not vary by it`, async () => {
      const url = route.url(uuid);
      const one = await t.app.inject({ url, headers: { host: 'one.test' } });
      const two = await t.app.inject({ url, headers: { host: 'two.test:8443' } });
      for (const res of [one, two]) {
        expect(res.statusCode, res.body).toBe(200);
        expect(varies(res.headers)).not.toContain('host');
        expect(route.link(res.body, BASE_URL), res.body.slice(0, 400)).toBe(true);
        expect(res.body).not.toMatch(/one\.test|two\.test/);
      }
      expect(two.headers.etag).toBe(one.headers.etag);
    });
  }
});
