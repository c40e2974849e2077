import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { skipWithout } from '../requirements.ts';

const one = entry('Rate-limited entry.', 1_700_000_000, '12345678-0000-4000-8000-000000000001');

describe('read and image rate limits', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [one], env: { RATE_LIMIT_READ: '5/1m', RATE_LIMIT_IMAGE: '2/1m' } });
  });
  afterAll(() => t.close());

  const get = (url: string, ip = '192.0.2.1', headers: Record<string, string> = {}) => t.app.inject({ url, remoteAddress: ip, headers });

  it('shares one budget across every public GET, per address, with RateLimit headers', async () => {
    const urls = ['/api/v1/nonsense/random', '/api/v1/nonsense/status', '/api/v1/emojis', '/api/v1/variables', `/api/v1/nonsense/${one.uuid}`];
    for (const [i, url] of urls.entries()) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['ratelimit-remaining']).toBe(String(4 - i));
    }
    const limited = await get('/api/v1/nonsense?format=json');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.json()).toMatchObject({ status: 429, title: 'Too Many Requests' });
    expect((await get('/api/v1/nonsense/random', '192.0.2.2')).statusCode).toBe(200);
  });

  it('does not limit health checks, docs or the admin API by the read budget', async () => {
    for (let i = 0; i < 8; i++) expect((await get('/healthz', '192.0.2.3')).statusCode).toBe(200);
    expect((await get('/openapi.json', '192.0.2.3')).statusCode).toBe(200);
    expect((await get('/api/v1/admin/reports', '192.0.2.3')).statusCode).toBe(401);
  });

  it('gives share images their own budget', async () => {
    const ip = '192.0.2.4';
    expect((await get(`/api/v1/nonsense/${one.uuid}.png`, ip)).statusCode).not.toBe(429);
    expect((await get(`/api/v1/nonsense/${one.uuid}.png`, ip)).statusCode).not.toBe(429);
    expect((await get(`/api/v1/nonsense/${one.uuid}.png`, ip)).statusCode).toBe(429);
    expect((await get(`/api/v1/nonsense/${one.uuid}`, ip)).statusCode).toBe(200);
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY is set', async () => {
    for (let i = 0; i < 6; i++) await get('/api/v1/nonsense/status', '192.0.2.5', { 'x-forwarded-for': `198.51.100.${i}` });
    expect((await get('/api/v1/nonsense/status', '192.0.2.5', { 'x-forwarded-for': '198.51.100.99' })).statusCode).toBe(429);
  });
});

describe('behind a trusted proxy', () => {
  it('limits the client address from X-Forwarded-For', async () => {
    const t = await createTestApp({ entries: [one], env: { RATE_LIMIT_READ: '2/1m', TRUST_PROXY: '127.0.0.1' } });
    try {
      const get = (client: string) => t.app.inject({ url: '/api/v1/nonsense/status', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': client } });
      expect((await get('203.0.113.1')).statusCode).toBe(200);
      expect((await get('203.0.113.1')).statusCode).toBe(200);
      expect((await get('203.0.113.1')).statusCode).toBe(429);
      expect((await get('203.0.113.2')).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

async function redisAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(6379, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

const skipRedis = skipWithout('Redis at 127.0.0.1:6379', await redisAnswers(), 'start redis-server');

describe.skipIf(skipRedis)('rate limits shared through Redis', () => {
  it('counts requests to two instances against one budget', async () => {
    const prefix = `${Date.now()}-${Math.random()}`;
    const env = { RATE_LIMIT_READ: '3/1m', REDIS_URL: 'redis://127.0.0.1:6379' };
    const a = await createTestApp({ entries: [one], env });
    const b = await createTestApp({ entries: [one], env });
    try {
      const ip = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${prefix.length % 250}`;
      const get = (t: TestContext) => t.app.inject({ url: '/api/v1/nonsense/status', remoteAddress: ip });
      expect((await get(a)).statusCode).toBe(200);
      expect((await get(b)).statusCode).toBe(200);
      expect((await get(a)).statusCode).toBe(200);
      expect((await get(b)).statusCode).toBe(429);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
