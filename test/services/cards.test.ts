import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareImageCache, shareImageCancelled } from '../../src/metrics/registry.ts';
import { CardCache } from '../../src/services/cards/cache.ts';
import { CardService } from '../../src/services/cards/index.ts';
import { CardQueueFull, RenderAborted, RenderPool } from '../../src/services/cards/pool.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const bytes = (n: number) => Buffer.alloc(n, 1);
const input = (text: string) => ({ text, emojis: new Map(), appName: 'Test' });
const isPng = (png: Buffer) => png.subarray(1, 4).toString('latin1') === 'PNG';

async function counter(metric: typeof shareImageCache | typeof shareImageCancelled, label?: string): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => label === undefined || v.labels.result === label).reduce((sum, v) => sum + v.value, 0);
}

describe('CardCache', () => {
  it('keeps cards within its byte budget, least recently used out first', () => {
    const cache = new CardCache(30);
    cache.set('a', bytes(10));
    cache.set('b', bytes(10));
    cache.set('c', bytes(10));
    expect(cache.get('a')).toBeDefined(); // a is now the most recent
    cache.set('d', bytes(10));
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.get('d')].every(Boolean)).toBe(true);
    expect([cache.size, cache.bytes]).toEqual([3, 30]);
  });

  it('never holds a card larger than the budget, and replaces a key in place', () => {
    const cache = new CardCache(30);
    cache.set('big', bytes(31));
    expect(cache.size).toBe(0);
    cache.set('a', bytes(10));
    cache.set('a', bytes(20));
    expect([cache.size, cache.bytes]).toEqual([1, 20]);
    cache.clear();
    expect([cache.size, cache.bytes]).toEqual([0, 0]);
  });
});

describe('RenderPool', () => {
  const pool = new RenderPool({ threads: 1, maxQueue: 1 });
  afterAll(() => pool.close());

  it('renders a card in a worker thread', async () => {
    const png = await pool.render(input('Drawn in a worker.'));
    expect(isPng(png)).toBe(true);
    expect(pool.stats).toEqual({ threads: 1, running: 0, waiting: 0 });
  });

  it('refuses at once when the thread is busy and the queue is full, saying when to retry', async () => {
    const first = pool.render(input('first'));
    const second = pool.render(input('second'));
    expect(pool.stats).toMatchObject({ running: 1, waiting: 1 });
    const refused = await pool.render(input('third')).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CardQueueFull);
    expect((refused as CardQueueFull).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((await Promise.all([first, second])).every(isPng)).toBe(true);
  });

  it('drops a waiting render whose signal aborts, and stops a running one', async () => {
    const cancelledBefore = await counter(shareImageCancelled);
    const running = new AbortController();
    const waiting = new AbortController();
    const first = pool.render(input('A long one. '.repeat(150)), running.signal);
    const second = pool.render(input('waiting'), waiting.signal);
    expect(pool.stats.waiting).toBe(1);
    waiting.abort();
    await expect(second).rejects.toBeInstanceOf(RenderAborted);
    expect(pool.stats.waiting).toBe(0);
    running.abort();
    await expect(first).rejects.toBeInstanceOf(RenderAborted);
    expect(await counter(shareImageCancelled)).toBe(cancelledBefore + 2);
    expect(pool.stats).toEqual({ threads: 1, running: 0, waiting: 0 });
    // The worker is still there and well.
    expect(isPng(await pool.render(input('after')))).toBe(true);
  });
});

describe('CardService', () => {
  let t: TestContext;
  let cards: CardService;
  const one = entry('One card for everybody.', 1_700_000_000, 'cccccccc-0000-4000-8000-000000000001');
  const two = entry('A card nobody waits for.', 1_700_000_001, 'cccccccc-0000-4000-8000-000000000002');
  const three = entry('Two callers, one leaves.', 1_700_000_002, 'cccccccc-0000-4000-8000-000000000003');
  beforeAll(async () => {
    t = await createTestApp({ entries: [one, two, three] });
    cards = new CardService({ appName: 'Test', cacheBytes: 1024 * 1024, threads: 1, maxQueue: 4 });
  });
  afterAll(async () => {
    await cards.close();
    await t.close();
  });
  const cardOf = async (e: typeof one) => cards.describe(t.storage, (await t.storage.entries.findVisible(e.uuid))!);

  it('renders concurrent requests for one card once, then answers from the cache', async () => {
    const card = await cardOf(one);
    const [miss, joined, hit] = [await counter(shareImageCache, 'miss'), await counter(shareImageCache, 'joined'), await counter(shareImageCache, 'hit')];
    const pngs = await Promise.all([1, 2, 3].map(() => cards.png(t.storage, card)));
    expect(pngs[1]).toBe(pngs[0]);
    expect(await counter(shareImageCache, 'miss')).toBe(miss + 1);
    expect(await counter(shareImageCache, 'joined')).toBe(joined + 2);
    expect(cards.cached(card)).toBe(pngs[0]);
    expect(await cards.png(t.storage, card)).toBe(pngs[0]);
    expect(await counter(shareImageCache, 'hit')).toBe(hit + 2); // cached() and png() each found it
    expect(cards.stats).toMatchObject({ cacheCards: 1, cacheBytes: pngs[0]!.length });
  });

  it('stops a render when every caller has gone, and starts afresh for the next one', async () => {
    const card = await cardOf(two);
    const a = new AbortController();
    const b = new AbortController();
    const first = cards.png(t.storage, card, a.signal);
    const second = cards.png(t.storage, card, b.signal);
    a.abort();
    b.abort();
    await expect(first).rejects.toBeInstanceOf(RenderAborted);
    await expect(second).rejects.toBeInstanceOf(RenderAborted);
    await expect.poll(() => cards.stats.running).toBe(0);
    expect(cards.cached(card)).toBeUndefined();
    expect(isPng(await cards.png(t.storage, card))).toBe(true);
  });

  it('keeps rendering for the callers who stay', async () => {
    const card = await cardOf(three);
    const leaving = new AbortController();
    const gone = cards.png(t.storage, card, leaving.signal);
    const staying = cards.png(t.storage, card, new AbortController().signal);
    leaving.abort();
    await expect(gone).rejects.toBeInstanceOf(RenderAborted);
    expect(isPng(await staying)).toBe(true);
    expect(cards.cached(card)).toBeDefined();
  });
});
