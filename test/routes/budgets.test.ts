/**
 * Every request is charged to the budget of the route it reaches: HEAD like GET, percent-encoded
 * paths like their decoded form, the site's pages like the API; health, metrics and static files not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const one = entry('A budgeted entry.', 1_700_000_000, '12345678-0000-4000-8000-0000000000b1');

describe('rate-limit budgets follow the matched route', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [one], env: { RATE_LIMIT_READ: '3/1m', RATE_LIMIT_IMAGE: '2/1m' } });
  });
  afterAll(() => t.close());

  let address = 10;
  const nextIp = () => `192.0.2.${address++}`;
  const send = (method: 'GET' | 'HEAD', url: string, ip: string) => t.app.inject({ method, url, remoteAddress: ip });

  it('charges HEAD to the same read budget as GET, once per request', async () => {
    const ip = nextIp();
    const first = await send('HEAD', '/api/v1/nonsense/random', ip);
    expect(first.statusCode).toBe(200);
    expect(first.headers['ratelimit-remaining']).toBe('2');
    expect((await send('GET', '/api/v1/nonsense/status', ip)).headers['ratelimit-remaining']).toBe('1');
    expect((await send('HEAD', '/api/v1/emojis', ip)).statusCode).toBe(200);
    expect((await send('HEAD', '/api/v1/variables', ip)).statusCode).toBe(429);
  });

  it('charges HEAD of a share image to the image budget', async () => {
    const ip = nextIp();
    expect((await send('HEAD', `/api/v1/nonsense/${one.uuid}.png`, ip)).headers['ratelimit-remaining']).toBe('1');
    expect((await send('HEAD', `/api/v1/nonsense/${one.uuid}.png`, ip)).statusCode).not.toBe(429);
    expect((await send('HEAD', `/api/v1/nonsense/${one.uuid}.png`, ip)).statusCode).toBe(429);
  });

  it.each([`%2Epng`, `.pn%67`, `%2epng`, `.PNG`])('charges <uuid>%s to the image budget', async (suffix) => {
    const ip = nextIp();
    const url = `/api/v1/nonsense/${one.uuid}${suffix}`;
    const res = await send('GET', url, ip);
    expect(res.headers['ratelimit-limit']).toBe('2');
    await send('GET', url, ip);
    expect((await send('GET', url, ip)).statusCode).toBe(429);
    // The read budget is untouched.
    expect((await send('GET', '/api/v1/nonsense/status', ip)).headers['ratelimit-remaining']).toBe('2');
  });

  it.each(['/', '/search?q=budget', `/nonsense/${one.uuid}`, `/nonsense/${one.uuid}/report`, '/admin'])('charges the page %s to the read budget', async (url) => {
    const ip = nextIp();
    const res = await send('GET', url, ip);
    expect(res.statusCode).toBe(200);
    expect(res.headers['ratelimit-limit']).toBe('3');
    await send('GET', url, ip);
    await send('GET', url, ip);
    const limited = await send('GET', url, ip);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
  });

  it('leaves health, metrics, static files and the API description out of every budget', async () => {
    const ip = nextIp();
    for (let i = 0; i < 5; i++) {
      for (const url of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/static/site.css']) {
        const res = await send('GET', url, ip);
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['ratelimit-limit'], url).toBeUndefined();
      }
    }
  });
});

describe('OPTIONS', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [one] });
  });
  afterAll(() => t.close());

  it('answers a CORS preflight with 204 and the allowed methods and headers', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/nonsense/random',
      headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toContain('GET');
    expect(res.headers['access-control-allow-headers']).toContain('if-none-match');
  });

  it('answers an OPTIONS without preflight headers with 204, not a text/plain 400', async () => {
    for (const url of ['/api/v1/nonsense/random', '/', '/nowhere']) {
      const res = await t.app.inject({ method: 'OPTIONS', url });
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['content-type'] ?? '', url).not.toContain('text/plain');
    }
  });
});
