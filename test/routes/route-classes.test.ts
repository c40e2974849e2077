/**
 * Route classes (src/http/route-classes.ts): each group's routes spend their class's budget and answer
 * errors in its format, and a path no route matches gets the class of its prefix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classOfPath, classOfUrl } from '../../src/http/route-classes.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const one = entry('Classified entry.', 1_700_000_000, '12345678-0000-4000-8000-0000000000c1');
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('classOfPath', () => {
  it('matches prefixes by whole path segments', () => {
    expect(classOfPath('/api')).toBe('api');
    expect(classOfPath('/api/v1/nonsense')).toBe('api');
    expect(classOfPath('/apiary')).toBe('site');
    expect(classOfPath('/api/v1/admin/entries')).toBe('admin');
    expect(classOfPath('/api/v1/administrators')).toBe('api');
    expect(classOfPath('/odata/v2/Entries')).toBe('odata');
    expect(classOfPath('/odata/v1')).toBe('api');
    expect(classOfPath('/odata/v2x')).toBe('api');
    expect(classOfPath('/favicon.ico')).toBe('static');
    expect(classOfPath('/static/site.css')).toBe('static');
    expect(classOfPath('/healthz')).toBe('operations');
    expect(classOfPath('/docs/json')).toBe('docs');
    expect(classOfPath('/')).toBe('site');
    expect(classOfUrl('/odata/v2?$format=json')).toBe('odata');
  });
});

describe('route classes over HTTP', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [one], env: { RATE_LIMIT_READ: '50/1m', RATE_LIMIT_IMAGE: '7/1m' } });
  });
  afterAll(() => t.close());

  const get = (url: string, accept?: string) => t.app.inject({ url, remoteAddress: '198.51.100.7', headers: accept === undefined ? {} : { accept } });

  it('charges each class its budget, and none where it has none', async () => {
    for (const url of ['/api/v1/nonsense/random', '/', '/search', '/odata/v2/', `/nonsense/${one.uuid}`]) {
      expect((await get(url)).headers['ratelimit-limit'], url).toBe('50');
    }
    expect((await get(`/api/v1/nonsense/${one.uuid}.png`)).headers['ratelimit-limit']).toBe('7');
    // The by-UUID route receives `.PNG`; it is charged as the share image it names.
    expect((await get(`/api/v1/nonsense/${one.uuid}.PNG`)).headers['ratelimit-limit']).toBe('7');
    for (const url of ['/healthz', '/readyz', '/metrics', '/favicon.ico', '/static/nothing.css', '/openapi.json', '/docs', '/api/v1/admin/entries']) {
      expect((await get(url)).headers['ratelimit-limit'], url).toBeUndefined();
    }
  });

  it('answers errors in the format of the class, matched or not', async () => {
    for (const url of ['/api/v1/nonsense/not-a-uuid', '/api/v1/nowhere', '/odata/v1', '/docs/nowhere', '/healthz/nowhere']) {
      const res = await get(url, BROWSER);
      expect(res.headers['content-type'], url).toMatch(/^application\/problem\+json/);
    }
    for (const url of ['/nowhere', '/apiary', '/static/nothing.css', `/nonsense/${one.uuid.replace('c1', 'c2')}`]) {
      const res = await get(url, BROWSER);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type'], url).toMatch(/^text\/html/);
      expect(res.headers.vary, url).toMatch(/Accept/);
    }
    const odata = await get('/odata/v2/Nowhere', BROWSER);
    expect(odata.statusCode).toBe(404);
    expect(odata.headers['content-type']).toMatch(/^application\/xml/);
    expect(odata.headers.dataserviceversion).toBe('2.0');
  });
});
