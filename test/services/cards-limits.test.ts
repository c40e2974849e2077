/**
 * The render pool's and the card service's bounds: a render's time limit terminates its worker, a
 * cancelled render that does not stop by itself has its worker terminated, and a failed card is
 * remembered for FAILURE_MEMORY_MS, then tried afresh.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { shareImageCache, shareImageCancelled } from '../../src/metrics/registry.ts';
import { CardService, CardUnavailable, FAILURE_MEMORY_MS } from '../../src/services/cards/index.ts';
import { RenderAborted, RenderFailed, RenderPool, RenderTimedOut } from '../../src/services/cards/pool.ts';
import type { TaskPool } from '../../src/services/worker-pool/index.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const input = (text: string) => ({ text, emojis: new Map(), appName: 'Test' });
const isPng = (png: Buffer) => png.subarray(1, 4).toString('latin1') === 'PNG';

async function counter(metric: typeof shareImageCache | typeof shareImageCancelled, label?: string): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => label === undefined || v.labels.result === label).reduce((sum, v) => sum + v.value, 0);
}

describe('RenderPool limits', () => {
  it('terminates a render past its time limit at once, and draws the next card on a new worker', async () => {
    const pool = new RenderPool({ threads: 1, maxQueue: 1 });
    try {
      const started = performance.now();
      // No card is drawn within a millisecond, and a cold worker takes far longer to start.
      const late = await pool.render(input('Too late.'), undefined, 1).catch((error: unknown) => error);
      expect(late).toBeInstanceOf(RenderTimedOut);
      // Bounded by loading the pool's modules, not by drawing.
      expect(performance.now() - started).toBeLessThan(2000);
      expect(pool.stats).toEqual({ threads: 1, running: 0, waiting: 0 });
      expect(isPng(await pool.render(input('On time.')))).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('counts the time limit from when the worker starts drawing, not from the wait for a worker', async () => {
    const pool = new RenderPool({ threads: 1, maxQueue: 1 });
    try {
      expect(isPng(await pool.render(input('Warm.')))).toBe(true);
      // The worker is handed the task only after a delay longer than the limit (a thread starting on
      // a busy host); the card itself takes far less than the limit to draw.
      const threads = (pool as unknown as { pool: TaskPool }).pool;
      const real = threads.run.bind(threads);
      vi.spyOn(threads, 'run').mockImplementation(async (...task) => (await new Promise((resolve) => setTimeout(resolve, 1500)), real(...task)));
      expect(isPng(await pool.render(input('Drawn in time.'), undefined, 1000))).toBe(true);
    } finally {
      vi.restoreAllMocks();
      await pool.close();
    }
  });

  it('terminates the worker of a cancelled render that does not stop by itself', async () => {
    const pool = new RenderPool({ threads: 1, maxQueue: 1, cancelGraceMs: 0 });
    try {
      const cancelled = await counter(shareImageCancelled);
      await pool.memory(); // the worker is up, and takes the render at once
      const gone = new AbortController();
      // A worker's first card draws the plate before it first looks at the cancellation flag, and a
      // service name in Japanese, Korean and Chinese makes that load three large fonts: a long step.
      const render = pool.render({ ...input('Nobody waits for this one.'), appName: 'テスト 한국어 中文' }, gone.signal);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const abortedAt = performance.now();
      gone.abort();
      await expect(render).rejects.toBeInstanceOf(RenderAborted);
      expect(performance.now() - abortedAt).toBeLessThan(250);
      expect(await counter(shareImageCancelled)).toBe(cancelled + 1);
      expect(pool.stats.running).toBe(0);
      expect(isPng(await pool.render(input('The next one.')))).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('ends a render whose worker runs out of memory with RenderFailed', async () => {
    const oom = Object.assign(new Error('Worker terminated due to reaching memory limit: JS heap out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' });
    const failed = new RenderFailed(oom);
    expect([failed.outOfMemory, failed.cause]).toEqual([true, oom]);
    expect(new RenderFailed(new Error('other')).outOfMemory).toBe(false);
  });
});

describe('CardService failure memory', () => {
  let t: TestContext;
  let cards: CardService;
  const one = entry('A card that never gets drawn in time.', 1_700_020_001, 'cdcdcdcd-0000-4000-8000-000000000001');
  beforeAll(async () => {
    t = await createTestApp({ entries: [one] });
    cards = new CardService({ appName: 'Test', cacheBytes: 1024 * 1024, threads: 1, maxQueue: 4, timeoutMs: 1 });
  });
  afterAll(async () => {
    await cards.close();
    await t.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers every caller of a failed render, and the next ones at once without drawing, until the memory expires', async () => {
    const card = await cards.describe(t.storage, (await t.storage.entries.findVisible(one.uuid))!);
    const [first, joined] = await Promise.all([cards.png(t.storage, card), cards.png(t.storage, card)].map((p) => p.catch((error: unknown) => error)));
    for (const error of [first, joined]) {
      expect(error).toBeInstanceOf(CardUnavailable);
      expect(error).toMatchObject({ reason: 'timeout', retryAfterSeconds: FAILURE_MEMORY_MS / 1000 });
    }
    expect((first as CardUnavailable).cause).toBeInstanceOf(RenderTimedOut);
    const misses = await counter(shareImageCache, 'miss');
    const again = await cards.png(t.storage, card).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(CardUnavailable);
    expect((again as CardUnavailable).cause).toBeUndefined();
    expect((again as CardUnavailable).retryAfterSeconds).toBeLessThanOrEqual(FAILURE_MEMORY_MS / 1000);
    expect(await counter(shareImageCache, 'miss')).toBe(misses);
    expect(cards.stats).toMatchObject({ running: 0, failedCards: 1 });

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + FAILURE_MEMORY_MS + 1);
    expect(cards.failure(card)).toBeUndefined();
    expect(cards.stats.failedCards).toBe(0);
  });
});
