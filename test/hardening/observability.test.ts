/**
 * /metrics, security headers next to CORS, overload refusals, request timeouts and the mapping of
 * database outages to 503.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { Sustained } from '../../src/plugins/overload.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { until } from '../wait.ts';

const UUID_A = '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11';
const UUID_B = '7a2d3b1f-9b5c-4d2f-8a68-3c4e0d1e2b22';

/** value reads one sample from the Prometheus text format (0 when absent). */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[2] ?? '';
    if (want.every((pair) => have.split(/,(?=[a-z_]+=")/).includes(pair))) total += Number(match[3]);
  }
  return total;
}

describe('GET /metrics', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [entry('Alpha text', 1_700_000_001, UUID_A), entry('Beta text', 1_700_000_002, UUID_B)], env: { RATE_LIMIT_REPORT: '1/1m' } });
  });
  afterAll(() => t.close());
  const scrape = async () => (await t.app.inject('/metrics')).body;

  it('is the Prometheus text format with the default process metrics', async () => {
    const res = await t.app.inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatch(/^# HELP process_resident_memory_bytes /m);
    expect(value(res.body, 'process_resident_memory_bytes')).toBeGreaterThan(1e6);
    expect(res.body).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(res.body).toMatch(/^# TYPE http_requests_in_flight gauge/m);
  });

  it('counts and times requests by route pattern and status, never by raw URL', async () => {
    const before = await scrape();
    const route = { method: 'GET', route: '/api/v1/nonsense/:id', status: '200' };
    await t.app.inject(`/api/v1/nonsense/${UUID_A}`);
    await t.app.inject(`/api/v1/nonsense/${UUID_B}`);
    await t.app.inject('/api/v1/nonsense/not-a-uuid');
    await t.app.inject('/no/such/path/7c1d');
    const after = await scrape();
    expect(value(after, 'http_requests_total', route) - value(before, 'http_requests_total', route)).toBe(2);
    expect(value(after, 'http_request_duration_seconds_count', route) - value(before, 'http_request_duration_seconds_count', route)).toBe(2);
    expect(value(after, 'http_requests_total', { ...route, status: '400' }) - value(before, 'http_requests_total', { ...route, status: '400' })).toBe(1);
    expect(value(after, 'http_requests_total', { route: 'unmatched', status: '404' }) - value(before, 'http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    for (const raw of [UUID_A, UUID_B, 'not-a-uuid', '7c1d']) expect(after).not.toContain(raw);
  });

  it('counts a finished request out of the in-flight gauge', async () => {
    await t.app.inject('/api/v1/nonsense?format=json');
    // Only the scrape itself is in flight.
    expect(value(await scrape(), 'http_requests_in_flight')).toBe(1);
  });

  it('reports database queries and figures', async () => {
    const before = value(await scrape(), 'nonsense_db_query_duration_seconds_count', { outcome: 'ok' });
    // Readiness asks the database every time (random and by-UUID may answer from the entry cache).
    await t.app.inject('/readyz');
    const after = await scrape();
    expect(value(after, 'nonsense_db_query_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(before);
    if (t.database.quirks.engine === 'sqlite') expect(value(after, 'nonsense_db_file_bytes', { file: 'database' })).toBeGreaterThan(0);
    else expect(value(after, 'nonsense_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
  });

  it('counts share-image cache misses, hits and render times', async () => {
    const before = await scrape();
    expect((await t.app.inject(`/api/v1/nonsense/${UUID_B}.png`)).statusCode).toBe(200);
    expect((await t.app.inject(`/api/v1/nonsense/${UUID_B}.png`)).statusCode).toBe(200);
    const after = await scrape();
    const delta = (name: string, labels?: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    expect(delta('nonsense_share_image_cache_total', { result: 'miss' })).toBe(1);
    expect(delta('nonsense_share_image_cache_total', { result: 'hit' })).toBe(1);
    expect(delta('nonsense_share_image_render_seconds_count')).toBe(1);
    expect(delta('http_requests_total', { route: '/api/v1/nonsense/:id.png', status: '200' })).toBe(2);
  });

  it('counts 429s by budget', async () => {
    const before = value(await scrape(), 'nonsense_rate_limited_total', { budget: 'report' });
    const report = () => t.app.inject({ method: 'POST', url: '/api/v1/nonsense/report', payload: { entryUuid: UUID_A, reason: 'duplicate' } });
    expect((await report()).statusCode).toBe(201);
    expect((await report()).statusCode).toBe(429);
    expect(value(await scrape(), 'nonsense_rate_limited_total', { budget: 'report' }) - before).toBe(1);
  });
});

describe('METRICS_TOKEN', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ env: { METRICS_TOKEN: 'scrape-token-0123456789' } });
  });
  afterAll(() => t.close());

  it('guards /metrics with a bearer token, compared whole', async () => {
    const none = await t.app.inject('/metrics');
    expect(none.statusCode).toBe(401);
    expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    for (const wrong of ['scrape-token-012345678', 'scrape-token-01234567890', 'x']) {
      expect((await t.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${wrong}` } })).statusCode).toBe(401);
    }
    const ok = await t.app.inject({ url: '/metrics', headers: { authorization: 'Bearer scrape-token-0123456789' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('http_requests_total');
  });
});

describe('security headers and CORS', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [entry('Gamma text', 1_700_000_003, UUID_A)] });
  });
  afterAll(() => t.close());

  it('puts the helmet headers on API answers, errors included, without a CSP of its own', async () => {
    for (const url of ['/api/v1/nonsense/random', `/api/v1/nonsense/${UUID_A}.png`, '/api/v1/nonsense/bad', '/nowhere']) {
      const res = await t.app.inject({ url, headers: { origin: 'https://elsewhere.example' } });
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      expect(res.headers['cross-origin-resource-policy'], url).toBe('cross-origin');
      expect(res.headers['x-frame-options'], url).toBe('SAMEORIGIN');
      expect(res.headers['content-security-policy'], url).toBeUndefined();
      expect(res.headers['strict-transport-security'], url).toBeUndefined();
      expect(res.headers['access-control-allow-origin'], url).toBe('*');
    }
  });

  it('keeps CORS preflights working and exposes the request id', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/nonsense/report',
      headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toContain('POST');
    const get = await t.app.inject({ url: '/api/v1/nonsense/random', headers: { origin: 'https://elsewhere.example' } });
    expect(get.headers['access-control-expose-headers']).toBe('*');
  });

  it('leaves the pages their own Content-Security-Policy', async () => {
    const docs = await t.app.inject('/docs/');
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-security-policy']).toBeDefined();
    const share = await t.app.inject(`/nonsense/${UUID_A}`);
    expect(share.statusCode).toBe(200);
    expect(share.headers['content-security-policy']).toMatch(/default-src/);
  });
});

/** block keeps the event loop busy in slices until stopped, as a saturated process would be. */
function blockEventLoop(sliceMs: number): () => void {
  let running = true;
  const slice = () => {
    if (!running) return;
    const end = Date.now() + sliceMs;
    while (Date.now() < end) {
      /* busy */
    }
    setImmediate(slice);
  };
  setImmediate(slice);
  return () => {
    running = false;
  };
}

describe('overload protection', () => {
  it('acts on saturation that lasts, not on a single stall', () => {
    const sustained = new Sustained(500);
    expect(sustained.seen(1000)).toBe(false);
    expect(sustained.seen(1400)).toBe(false);
    expect(sustained.seen(1800)).toBe(true);
    // A quiet gap longer than a sample starts over.
    expect(sustained.seen(2600)).toBe(false);
  });

  it('answers 503 problem+json with Retry-After while the event loop is saturated, keeps /healthz, and recovers', async () => {
    const t = await createTestApp({ env: { OVERLOAD_MAX_EVENT_LOOP_DELAY: '30ms' } });
    try {
      expect((await t.app.inject('/api/v1/nonsense/status')).statusCode).toBe(200);
      const stop = blockEventLoop(120);
      let refused;
      try {
        refused = await until('a 503 while the event loop is saturated', async () => {
          const res = await t.app.inject('/api/v1/nonsense/status');
          return res.statusCode === 503 && res;
        }, { timeoutMs: 8000, intervalMs: 50 });
        expect((await t.app.inject('/healthz')).statusCode).toBe(200);
        expect((await t.app.inject('/metrics')).body).toMatch(/nonsense_overload_rejected_total\{reason="eventLoopDelay"\} [1-9]/);
      } finally {
        stop();
      }
      expect(refused?.statusCode).toBe(503);
      expect(refused?.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused?.headers['retry-after']).toBe('5');
      expect(refused?.json()).toMatchObject({ status: 503, detail: expect.stringMatching(/overloaded/) });
      await expect.poll(async () => (await t.app.inject('/api/v1/nonsense/status')).statusCode, { timeout: 5000, interval: 50 }).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('request timeout', () => {
  it('answers 408 problem+json to a client that does not finish its request in REQUEST_TIMEOUT', async () => {
    const t = await createTestApp({ env: { REQUEST_TIMEOUT: '500ms' } });
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as net.AddressInfo;
      const started = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        let data = '';
        const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /api/v1/nonsense/status HTTP/1.1\r\nHost: x\r\n'));
        socket.on('data', (chunk) => (data += chunk));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(answer).toContain('application/problem+json');
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      await t.close();
    }
  });
});

describe('database unavailability', () => {
  it('recognises connection failures of both engines, and nothing else', () => {
    const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    for (const error of [
      withCode('ECONNREFUSED'),
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('08006'),
      withCode('SQLITE_BUSY', 'database is locked'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'connect failed'),
      new Error('wrapped', { cause: withCode('ECONNRESET') }),
    ]) {
      expect(isDatabaseUnavailable(error), String(error)).toBe(true);
    }
    for (const error of [new Error('syntax error at or near "x"'), withCode('23505'), withCode('SQLITE_CONSTRAINT'), withCode('22P02'), null, 'ECONNREFUSED']) {
      expect(isDatabaseUnavailable(error), String(error)).toBe(false);
    }
  });
});
