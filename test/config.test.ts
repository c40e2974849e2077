import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, galaxyCommandThreadsFor, galaxyThreadsFor, loadConfig, parseRateLimit } from '../src/config.ts';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      database: { engine: 'sqlite', file: path.resolve('data/nonsense.db') },
      baseUrl: null,
      appName: 'Nonsense Entry Service',
      redisUrl: null,
      logLevel: 'info',
      trustProxy: false,
      rateLimitRead: { max: 600, windowMs: 60_000 },
      rateLimitImage: { max: 60, windowMs: 60_000 },
      rateLimitReport: { max: 10, windowMs: 600_000 },
      demoData: true,
      metricsToken: null,
      overloadMaxEventLoopDelayMs: 1000,
      overloadMaxEventLoopUtilization: null,
      requestTimeoutMs: 30_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names the variable that is wrong', () => {
    expect(problemsOf({ PORT: 'abc' })).toEqual([expect.stringMatching(/^PORT .*"abc"/)]);
    expect(problemsOf({ PORT: '70000' })[0]).toMatch(/^PORT/);
  });

  it('reports every bad variable at once', () => {
    const problems = problemsOf({ PORT: '-1', LOG_LEVEL: 'loud', BASE_URL: 'ftp://x', RATE_LIMIT_READ: 'lots', TRUST_PROXY: 'maybe?' });
    expect(problems.map((p) => p.split(' ')[0])).toEqual(['PORT', 'BASE_URL', 'LOG_LEVEL', 'TRUST_PROXY', 'RATE_LIMIT_READ']);
  });

  it('selects the engine from DATABASE_URL', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@localhost/db' }).database).toEqual({ engine: 'postgres', url: 'postgres://u:p@localhost/db' });
    expect(loadConfig({ DATABASE_URL: 'postgresql://localhost/db' }).database.engine).toBe('postgres');
    expect(loadConfig({ DATABASE_URL: '/tmp/x.db' }).database).toEqual({ engine: 'sqlite', file: '/tmp/x.db' });
    // Only the default folder is made when missing; any other must exist.
    expect(loadConfig({}).database).toEqual({ engine: 'sqlite', file: path.resolve('data/nonsense.db'), createFolder: true });
    expect(loadConfig({ DATABASE_URL: 'data/other.db' }).database).toMatchObject({ createFolder: true });
    expect(loadConfig({ DATABASE_URL: 'elsewhere/x.db' }).database).not.toHaveProperty('createFolder');
    expect(problemsOf({ DATABASE_URL: 'mysql://localhost/db' })[0]).toMatch(/^DATABASE_URL/);
  });

  it('normalises BASE_URL and TRUST_PROXY', () => {
    expect(loadConfig({ BASE_URL: 'https://nonsense.example.org/' }).baseUrl).toBe('https://nonsense.example.org');
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' }).trustProxy).toEqual(['127.0.0.1', '10.0.0.0/8']);
  });

  it('redacts secrets when describing the configuration', () => {
    const shown = describeConfig(loadConfig({ DATABASE_URL: 'postgres://u:hunter2@db/x', REDIS_URL: 'redis://:hunter2@cache:6379' }));
    expect(JSON.stringify(shown)).not.toContain('hunter2');
    expect(shown.PORT).toBe(8080);
  });
});

describe('operations settings', () => {
  it('reads METRICS_TOKEN, the overload thresholds and REQUEST_TIMEOUT', () => {
    const config = loadConfig({
      METRICS_TOKEN: 'a-long-enough-token-123',
      OVERLOAD_MAX_EVENT_LOOP_DELAY: '250ms',
      OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0.98',
      REQUEST_TIMEOUT: '2m',
    });
    expect(config).toMatchObject({ metricsToken: 'a-long-enough-token-123', overloadMaxEventLoopDelayMs: 250, overloadMaxEventLoopUtilization: 0.98, requestTimeoutMs: 120_000 });
    expect(loadConfig({ OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off', REQUEST_TIMEOUT: 'OFF', OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '1' })).toMatchObject({
      overloadMaxEventLoopDelayMs: null,
      requestTimeoutMs: null,
      overloadMaxEventLoopUtilization: 1,
    });
  });

  it('names each bad operations setting', () => {
    const problems = problemsOf({ METRICS_TOKEN: 'short', OVERLOAD_MAX_EVENT_LOOP_DELAY: '0s', OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '1.5', REQUEST_TIMEOUT: '30' });
    expect(problems.map((p) => p.split(' ')[0])).toEqual(['METRICS_TOKEN', 'OVERLOAD_MAX_EVENT_LOOP_DELAY', 'OVERLOAD_MAX_EVENT_LOOP_UTILIZATION', 'REQUEST_TIMEOUT']);
    for (const bad of ['0', '-0.5', 'x', '']) expect(problemsOf({ OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: bad })[0]).toMatch(/^OVERLOAD_MAX_EVENT_LOOP_UTILIZATION/);
    expect(problemsOf({ METRICS_TOKEN: 'has spaces in the middle of it' })[0]).toMatch(/^METRICS_TOKEN/);
  });

  it('hides METRICS_TOKEN when describing the configuration', () => {
    const shown = describeConfig(loadConfig({ METRICS_TOKEN: 'a-long-enough-token-123' }));
    expect(shown.METRICS_TOKEN).toBe('***');
    expect(describeConfig(loadConfig({})).METRICS_TOKEN).toBeNull();
  });
});

describe('parseRateLimit', () => {
  it('reads N/window and off', () => {
    expect(parseRateLimit('600/1m')).toEqual({ max: 600, windowMs: 60_000 });
    expect(parseRateLimit('10/10m')).toEqual({ max: 10, windowMs: 600_000 });
    expect(parseRateLimit('5/s')).toEqual({ max: 5, windowMs: 1000 });
    expect(parseRateLimit('100/2h')).toEqual({ max: 100, windowMs: 7_200_000 });
    expect(parseRateLimit('OFF')).toBeNull();
  });

  it('rejects anything else', () => {
    for (const bad of ['', '10', '0/1m', '10/0m', '10/1d', '1.5/1m', 'ten/1m']) expect(() => parseRateLimit(bad)).toThrow();
  });
});

describe('isLoopback', () => {
  it('tells the addresses reachable from this machine only', async () => {
    const { isLoopback } = await import('../src/server.ts');
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) expect(isLoopback(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.0.2.7', 'nonsense.example.org']) expect(isLoopback(host), host).toBe(false);
  });
});

describe('share card settings', () => {
  it('reads CARD_CACHE_BYTES, CARD_RENDER_THREADS and CARD_RENDER_QUEUE, with their defaults', () => {
    const defaults = loadConfig({});
    expect(defaults.cardCacheBytes).toBe(32 * 1024 * 1024);
    expect(defaults.cardRenderThreads).toBeGreaterThanOrEqual(1);
    expect(defaults.cardRenderQueue).toBe(32);
    expect(loadConfig({ CARD_CACHE_BYTES: '512KiB', CARD_RENDER_THREADS: '3', CARD_RENDER_QUEUE: '0' })).toMatchObject({
      cardCacheBytes: 512 * 1024,
      cardRenderThreads: 3,
      cardRenderQueue: 0,
    });
    for (const [raw, bytes] of [['0', 0], ['1000', 1000], ['64m', 64 * 1024 ** 2], ['1 GiB', 1024 ** 3], ['2k', 2048]] as const) {
      expect(loadConfig({ CARD_CACHE_BYTES: raw }).cardCacheBytes).toBe(bytes);
    }
  });

  it('names each bad share card setting', () => {
    const problems = problemsOf({ CARD_CACHE_BYTES: '32 apples', CARD_RENDER_THREADS: '0', CARD_RENDER_QUEUE: '-1' });
    expect(problems.map((p) => p.split(' ')[0])).toEqual(['CARD_CACHE_BYTES', 'CARD_RENDER_THREADS', 'CARD_RENDER_QUEUE']);
    for (const bad of ['', '1.5MiB', '9999999999999g']) expect(problemsOf({ CARD_CACHE_BYTES: bad })[0]).toMatch(/^CARD_CACHE_BYTES/);
    expect(problemsOf({ CARD_RENDER_THREADS: '65' })[0]).toMatch(/^CARD_RENDER_THREADS/);
  });
});

describe('galaxyThreadsFor', () => {
  it('lays the galaxy out on one thread below four cores, on two from four', () => {
    expect([1, 2, 3, 4, 8, 64].map(galaxyThreadsFor)).toEqual([1, 1, 1, 2, 2, 2]);
  });

  it('lays it out on every core up to 8 for the command, which answers no requests', () => {
    expect([1, 2, 3, 4, 8, 64].map(galaxyCommandThreadsFor)).toEqual([1, 2, 3, 4, 8, 8]);
  });
});
