import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const one = entry('Only entry.', 1_700_000_000, 'cccccccc-0000-4000-8000-000000000001');

describe('HTTP behaviour shared by every endpoint', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [one] });
  });
  afterAll(() => t.close());

  it('answers unknown paths with 404 problem+json', async () => {
    for (const url of ['/nope', '/api/v1/nope', '/api/v2/nonsense/random', `/${'a'.repeat(5000)}`]) {
      const res = await t.app.inject(url);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(res.json()).toMatchObject({ type: 'about:blank', title: 'Not Found', status: 404 });
      expect(res.json().detail.length).toBeLessThan(300);
    }
  });

  it('answers a wrong method with 405 and Allow, whose methods the detail lists too', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'] as const) {
      const res = await t.app.inject({ method, url: `/api/v1/nonsense/${one.uuid}` });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
      expect(res.json()).toMatchObject({ status: 405, detail: `${method} is not allowed on /api/v1/nonsense/${one.uuid}; allowed: GET, HEAD.` });
    }
  });

  it('answers GET on the report endpoint with 405 and Allow: POST (not "report is not a UUID")', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'] as const) {
      const res = await t.app.inject({ method, url: '/api/v1/nonsense/report' });
      expect(res.statusCode, method).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(res.json().detail).toBe(`${method} is not allowed on /api/v1/nonsense/report; allowed: POST.`);
    }
    const head = await t.app.inject({ method: 'HEAD', url: '/api/v1/nonsense/report' });
    expect(head.statusCode).toBe(405);
    expect(head.headers.allow).toBe('POST');
  });

  it('answers HEAD on every GET without a body', async () => {
    for (const url of ['/api/v1/nonsense/random', `/api/v1/nonsense/${one.uuid}`, '/api/v1/nonsense/status', '/api/v1/emojis', '/api/v1/variables', '/healthz', '/openapi.json']) {
      const res = await t.app.inject({ method: 'HEAD', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe('');
    }
  });

  it('allows any origin (CORS) and answers preflights', async () => {
    const res = await t.app.inject({ url: '/api/v1/nonsense/random', headers: { origin: 'https://somewhere.example' } });
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe('*');
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/nonsense/random',
      headers: { origin: 'https://somewhere.example', 'access-control-request-method': 'GET' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
  });

  it('ignores unknown query parameters and tolerates long query strings', async () => {
    const res = await t.app.inject(`/api/v1/nonsense/random?foo=bar&x=${'y'.repeat(8000)}&%00=%ff`);
    expect(res.statusCode).toBe(200);
  });

  it('ignores a body sent with GET', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/nonsense/${one.uuid}`, headers: { 'content-type': 'application/json' }, payload: '{"broken' });
    expect(res.statusCode).toBe(200);
  });

  it('returns a request id, honouring a sane one from a proxy', async () => {
    const fresh = await t.app.inject('/healthz');
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const given = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'proxy-123' } });
    expect(given.headers['x-request-id']).toBe('proxy-123');
    const hostile = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'a b<script>' } });
    expect(hostile.headers['x-request-id']).not.toContain('<');
    // Any spelling of the name; sent twice, neither is taken (as their joined value would not pass).
    const upper = await t.app.inject({ url: '/healthz', headers: { 'X-REQUEST-ID': 'proxy-456' } });
    expect(upper.headers['x-request-id']).toBe('proxy-456');
    const twice = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': ['proxy-1', 'proxy-2'] } });
    expect(twice.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports liveness and readiness', async () => {
    expect((await t.app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject('/readyz')).json()).toEqual({ status: 'ok' });
  });

  it('serves an OpenAPI 3.1 document of the API', async () => {
    const res = await t.app.inject('/openapi.json');
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    for (const path of ['/api/v1/nonsense/random', '/api/v1/nonsense/status', '/api/v1/nonsense/{id}', '/api/v1/emojis', '/api/v1/emojis/{file}', '/api/v1/variables']) {
      expect(doc.paths[path], path).toBeDefined();
    }
    const entry = doc.paths['/api/v1/nonsense/random'].get.responses['200'].content['application/json'].schema;
    expect(Object.keys(entry.properties)).toEqual(['uuid', 'nonsense', 'original_nonsense', 'timestamp']);
    expect(doc.paths['/api/v1/nonsense/{id}'].get.responses['404'].content['application/problem+json']).toBeDefined();
  });

  it('serves the interactive reference at /docs from its own assets', async () => {
    const res = await t.app.inject('/docs/');
    expect([200, 302]).toContain(res.statusCode);
    const page = res.statusCode === 302 ? await t.app.inject(res.headers.location as string) : res;
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)\./);
  });
});

describe('a broken database', () => {
  it('fails readiness with 503 problem+json and hides the cause', async () => {
    const t = await createTestApp();
    try {
      await t.database.close();
      const ready = await t.app.inject('/readyz');
      expect(ready.statusCode).toBe(503);
      expect(ready.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      const random = await t.app.inject('/api/v1/nonsense/random');
      expect(random.statusCode).toBe(500);
      expect(random.body).not.toMatch(/sqlite|select|at .*\.ts/i);
      expect(random.json().detail).toContain(random.headers['x-request-id']);
    } finally {
      await t.close();
    }
  });
});
