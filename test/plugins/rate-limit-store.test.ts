/**
 * The in-process rate-limit store: LocalStore's counting within a byte budget, the oldest counters
 * dropped first, and its size in /metrics.
 */
import { describe, expect, it, vi } from 'vitest';
import { budgetedStore, COUNTER_BYTES } from '../../src/plugins/rate-limit-store.ts';
import { createTestApp } from '../helper.ts';

const count = (store: { incr: (key: string, cb: (e: Error | null, r: { current: number; ttl: number }) => void, window: number) => void }, key: string, window = 60_000) => {
  let result = { current: -1, ttl: -1 };
  store.incr(key, (_error, r) => (result = r), window);
  return result;
};

describe('budgetedStore', () => {
  it('counts per key within the window and starts over after it', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const { Store } = budgetedStore(1024 * 1024, 1);
      const store = new Store().child();
      expect(count(store, 'a', 50)).toMatchObject({ current: 1, ttl: 50 });
      vi.advanceTimersByTime(10);
      expect(count(store, 'a', 50)).toMatchObject({ current: 2, ttl: 40 });
      expect(count(store, 'b', 50).current).toBe(1);
      let read = { current: -1, ttl: -1 };
      store.read('a', (_e, r) => (read = r), 50);
      expect(read).toEqual({ current: 2, ttl: 40 });
      vi.advanceTimersByTime(40);
      expect(count(store, 'a', 50).current).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps at most its share of the budget, dropping the least recently used', () => {
    const { Store, counters } = budgetedStore(100 * COUNTER_BYTES, 2);
    const read = new Store().child();
    const image = new Store().child();
    for (let i = 0; i < 1000; i++) count(read, `read:${i}`);
    count(image, 'image:x');
    expect(counters()).toBe(51);
    expect(count(read, 'read:999').current).toBe(2);
    expect(count(read, 'read:0').current).toBe(1);
  });
});

describe('rate-limit counters in the app', () => {
  it('stay within RATE_LIMIT_CACHE_BYTES however many addresses come, and show in /metrics', async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_READ: '5/1m', RATE_LIMIT_CACHE_BYTES: '20KiB', TRUST_PROXY: 'loopback' } });
    try {
      for (let i = 0; i < 400; i++) {
        await t.app.inject({ url: '/api/v1/nonsense/status', headers: { 'x-forwarded-for': `10.0.${i >> 8}.${i & 255}` } });
      }
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await t.app.inject({ url: '/api/v1/nonsense/status', headers: { 'x-forwarded-for': '10.9.9.9' } })).statusCode);
      expect(statuses.filter((status) => status === 429)).toHaveLength(2);
      const metrics = (await t.app.inject('/metrics')).body;
      const bytes = Number(/^nonsense_cache_bytes\{cache="rate_limits"\} (\d+)$/m.exec(metrics)?.[1]);
      expect(bytes).toBeGreaterThan(0);
      expect(bytes).toBeLessThanOrEqual(20 * 1024);
    } finally {
      await t.close();
    }
  });

  it('takes a unit synchronously unless it would be one too many, and names the budgets', () => {
    const { Store, budget } = budgetedStore(1024 * 1024, 2);
    const parent = new Store();
    const read = parent.child({ budget: 'read' });
    parent.child({ budget: 'image' });
    expect(budget('read')).toBe(read);
    expect(budget('report')).toBeUndefined();
    expect(read.take('read:a', 1000, 2)).toMatchObject({ current: 1, ttl: 1000 });
    expect(read.take('read:a', 1000, 2)).toMatchObject({ current: 2 });
    // The third would exceed: nothing is spent, and the hook's own count still sees 2.
    expect(read.take('read:a', 1000, 2)).toBeNull();
    expect(count(read, 'read:a', 1000).current).toBe(3);
    expect(read.take('read:b', 1000, 2)).toMatchObject({ current: 1 });
  });
});
