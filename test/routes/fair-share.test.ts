/**
 * Fair share between addresses, through HTTP on the engine of the run: an address may have only so
 * many heavy requests running at once (429 beyond, while other addresses are served), and its OData
 * reads spend a budget of database time (429 in the OData error format once spent, other addresses
 * unaffected).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TimeBudgets } from '../../src/plugins/fair-share.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const T0 = 1_700_000_000;
const GREEDY = '10.0.0.1';
const OTHER = '10.0.0.2';

describe('heavy requests per address', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ env: { HEAVY_REQUESTS_PER_CLIENT: '2' }, entries: Array.from({ length: 50 }, (_, i) => entry(`Heavy ${i}: a sock`, T0 + i)) });
  });
  afterAll(() => t.close());
  afterEach(() => vi.restoreAllMocks());

  it('refuses one more than the limit from one address with 429, and serves other addresses meanwhile', async () => {
    // Every heavy request below waits, once admitted, until the gate opens: they run at once.
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const real = t.storage.variables.values.bind(t.storage.variables);
    const waiting = vi.spyOn(t.storage.variables, 'values').mockImplementation(async () => (await opened, real()));
    const held = [
      t.app.inject({ url: '/api/v1/nonsense?format=csv', remoteAddress: GREEDY }),
      t.app.inject({ url: '/odata/v2/nonsense_list?$top=5', remoteAddress: GREEDY }),
    ];
    await expect.poll(() => waiting.mock.calls.length, { timeout: 10_000 }).toBe(2);

    for (const url of ['/api/v1/nonsense?format=json', '/odata/v2/nonsense_list', '/api/v1/nonsense/galaxy']) {
      const refused = await t.app.inject({ url, remoteAddress: GREEDY });
      expect(refused.statusCode, url).toBe(429);
      expect(refused.headers['retry-after'], url).toBe('1');
      const detail = url.startsWith('/odata') ? refused.body : refused.json().detail;
      expect(detail, url).toContain('already has 2 exports, searches, OData or galaxy requests running');
    }
    expect((await t.app.inject({ url: '/odata/v2/nonsense_list', remoteAddress: GREEDY })).headers['content-type']).toMatch(/^application\/xml/);
    // Light reads are never heavy.
    expect((await t.app.inject({ url: '/api/v1/nonsense/status', remoteAddress: GREEDY })).statusCode).toBe(200);

    const other = t.app.inject({ url: '/api/v1/nonsense?format=txt', remoteAddress: OTHER });
    await expect.poll(() => waiting.mock.calls.length, { timeout: 10_000 }).toBe(3);
    open();
    for (const answer of [...held, other]) expect((await answer).statusCode).toBe(200);
    // Places are given back when the answers are sent.
    expect((await t.app.inject({ url: '/api/v1/nonsense?format=json', remoteAddress: GREEDY })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/api/v1/nonsense?format=json', remoteAddress: GREEDY })).statusCode).toBe(200);
  });

  it('gives the place back when a request fails', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ url: '/odata/v2/nonsense_list?$filter=nonsense eq 1', remoteAddress: GREEDY });
      expect(res.statusCode).toBe(400);
    }
    expect((await t.app.inject({ url: '/api/v1/nonsense?format=json', remoteAddress: GREEDY })).statusCode).toBe(200);
  });
});

describe('the OData time budget per address', () => {
  let t: TestContext;
  // A filter that builds 2 kB of text per row over 3,000 entries: far more than 1 ms of database work.
  const wide = (depth: number): string => (depth === 0 ? 'nonsense' : `concat(${wide(depth - 1)},${wide(depth - 1)})`);
  const heavy = `/odata/v2/nonsense_list/$count?$filter=${encodeURIComponent(`indexof(${wide(5)},'zq') eq 7`)}`;
  beforeAll(async () => {
    t = await createTestApp({
      env: { ODATA_TIME_BUDGET: '1ms/1m' },
      entries: Array.from({ length: 3000 }, (_, i) => entry(`Entry ${i} with enough words to make concatenation cost something`, T0 + i)),
    });
  });
  afterAll(() => t.close());

  it('refuses an address that has spent its database time, in the OData format, and no other', async () => {
    const first = await t.app.inject({ url: heavy, remoteAddress: GREEDY });
    expect(first.statusCode, first.body).toBe(200);
    for (const format of ['atom', 'json'] as const) {
      const refused = await t.app.inject({ url: `${heavy}&$format=${format}`, remoteAddress: GREEDY });
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(refused.headers.dataserviceversion).toBe('2.0');
      const message = format === 'json' ? refused.json().error.message.value : refused.body;
      expect(message).toContain('Your address has used its OData database time (1 ms per 1 min)');
      if (format === 'atom') expect(refused.body).toMatch(/^<\?xml/);
    }
    // Other addresses are served, and the budget is OData's alone.
    expect((await t.app.inject({ url: heavy, remoteAddress: OTHER })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/api/v1/nonsense?format=json', remoteAddress: GREEDY })).statusCode).toBe(200);
  });
});

describe('TimeBudgets', () => {
  it('recovers at the budget rate and forgets the clients charged longest ago past its size', () => {
    let now = 0;
    const budgets = new TimeBudgets({ ms: 1000, windowMs: 60_000 }, 2, () => now);
    budgets.charge('a', 999);
    expect(budgets.retryAfterSeconds('a')).toBe(0);
    budgets.charge('a', 1001);
    // 1,000 ms over: recovered at 1 s a minute, in 60 s.
    expect(budgets.retryAfterSeconds('a')).toBe(60);
    now = 30_000;
    expect(budgets.retryAfterSeconds('a')).toBe(30);
    now = 60_001;
    expect(budgets.retryAfterSeconds('a')).toBe(0);
    // Far over: never asked to wait longer than the window.
    budgets.charge('b', 1_000_000);
    expect(budgets.retryAfterSeconds('b')).toBe(60);
    budgets.charge('c', 5000);
    expect(budgets.clients).toBe(2);
    expect(budgets.retryAfterSeconds('a')).toBe(0);
    expect(budgets.retryAfterSeconds('c')).toBeGreaterThan(0);
  });
});
