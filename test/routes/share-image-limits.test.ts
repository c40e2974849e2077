/**
 * What a share card may cost: an entry whose server variables expand far beyond what a card shows,
 * and an emoji image that declares enormous dimensions, are drawn within bounded time and memory;
 * a render that fails is answered 503 at once on every repeat instead of being started again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { Piscina } from 'piscina';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { shareImageCache } from '../../src/metrics/registry.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';
import { blackPng } from '../png.ts';

const png = (uuid: string) => `/api/v1/nonsense/${uuid}.png`;

/** Process memory may grow by this much while a hostile card is drawn (a render worker and its fonts are already loaded). */
const RSS_GROWTH_LIMIT = 300 * 1024 * 1024;
/** A hostile card must be answered within this long. */
const ANSWER_WITHIN_MS = 12_000;
/** How often the memory is sampled while a card is drawn: a measurement over time, not a wait. */
const SAMPLE_EVERY_MS = 20;

async function misses(): Promise<number> {
  const { values } = await shareImageCache.get();
  return values.filter((v) => v.labels.result === 'miss').reduce((sum, v) => sum + v.value, 0);
}

/**
 * timedRequest answers the request, the time it took and the largest growth of the process's
 * resident memory (render threads included) seen while it ran. It fails as soon as the memory grows
 * past RSS_GROWTH_LIMIT or the answer takes longer than ANSWER_WITHIN_MS.
 */
async function timedRequest(t: TestContext, url: string): Promise<{ res: LightMyRequestResponse; ms: number; growth: number }> {
  const before = process.memoryUsage.rss();
  const started = performance.now();
  let growth = 0;
  let settled = false;
  const request = t.app.inject(url).finally(() => (settled = true));
  while (!settled) {
    growth = Math.max(growth, process.memoryUsage.rss() - before);
    if (growth > RSS_GROWTH_LIMIT) throw new Error(`${url}: the process grew by ${(growth / 2 ** 20).toFixed(0)} MiB while drawing it`);
    if (performance.now() - started > ANSWER_WITHIN_MS) throw new Error(`${url}: no answer within ${ANSWER_WITHIN_MS} ms`);
    await Promise.race([request, sleep(SAMPLE_EVERY_MS)]);
  }
  const res = await request;
  return { res, ms: performance.now() - started, growth: Math.max(growth, process.memoryUsage.rss() - before) };
}

describe('share images: hostile entries and emojis', () => {
  // 333 × `$LONG$` is 1,998 characters, within the entry limit; each value is 200 characters, the
  // longest a variable value may be, so the text expands to 66,600 characters.
  const LONG = { name: '$LONG$', description: 'long values', values: [0, 1, 2, 3, 4].map((i) => `value ${i} of a long variable with plenty of words to fill a card `.repeat(4).slice(0, 200)) };
  const expanding = entry('$LONG$'.repeat(333), 1_700_010_001, 'abababab-0000-4000-8000-000000000001');
  const warm = entry('A short card to start the render worker.', 1_700_010_002, 'abababab-0000-4000-8000-000000000002');
  const huge = entry('Look at this :huge: emoji.', 1_700_010_003, 'abababab-0000-4000-8000-000000000003');
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [expanding, warm, huge], variables: [LONG] });
    await t.storage.emojis.put('huge', 'image/png', await blackPng(60_000), 'test');
    expect((await t.app.inject(png(warm.uuid))).statusCode).toBe(200);
  });
  afterAll(() => t.close());

  it('answers an entry whose variables expand to 67 KB in bounded time and memory, and a repeat at once', async () => {
    const first = await timedRequest(t, png(expanding.uuid));
    expect([200, 503]).toContain(first.res.statusCode);
    const missesBefore = await misses();
    const again = await timedRequest(t, png(expanding.uuid));
    expect(again.res.statusCode).toBe(first.res.statusCode);
    expect(again.ms).toBeLessThan(1000);
    expect(await misses()).toBe(missesBefore);
  });

  it('draws a card whose emoji image declares 60,000 × 60,000 pixels without decoding it', async () => {
    const { res } = await timedRequest(t, png(huge.uuid));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
  });
});

describe('share images: a render that takes too long', () => {
  const slow = entry('Every card takes longer than a millisecond to draw.', 1_700_011_001, 'acacacac-0000-4000-8000-000000000001');
  const other = entry('So does this one, on a new render thread.', 1_700_011_002, 'acacacac-0000-4000-8000-000000000002');
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [slow, other], env: { CARD_RENDER_TIMEOUT: '1ms', CARD_RENDER_THREADS: '1' } });
  });
  afterAll(() => t.close());

  it('answers 503 problem+json with Retry-After once the time is up, and every repeat at once without drawing', async () => {
    const first = await timedRequest(t, png(slow.uuid));
    expect(first.res.statusCode).toBe(503);
    expect(first.res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(first.res.headers['cache-control']).toBe('no-store');
    expect(first.res.headers.etag).toBeUndefined();
    expect(Number(first.res.headers['retry-after'])).toBeGreaterThanOrEqual(60);
    expect(first.res.json().detail).toMatch(/could not be drawn/);
    const missesBefore = await misses();
    for (const method of ['GET', 'HEAD'] as const) {
      const started = performance.now();
      const again = await t.app.inject({ method, url: png(slow.uuid) });
      expect(performance.now() - started).toBeLessThan(1000);
      expect(again.statusCode).toBe(503);
      expect(Number(again.headers['retry-after'])).toBeGreaterThanOrEqual(60);
    }
    expect(await misses()).toBe(missesBefore);
    expect(t.cards.stats).toMatchObject({ running: 0, waiting: 0, failedCards: 1 });
    // The thread that timed out was replaced: another card gets a render (and its own 503) too.
    const next = await timedRequest(t, png(other.uuid));
    expect(next.res.statusCode).toBe(503);
    expect(await misses()).toBe(missesBefore + 1);
  });
});

describe('share images: a render worker out of memory', () => {
  const card = entry('Drawn by a worker that runs out of memory.', 1_700_012_001, 'adadadad-0000-4000-8000-000000000001');
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [card] });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await t.close();
  });

  it('answers 503 with Retry-After, never 500, and remembers it', async () => {
    // How piscina ends a task whose worker passed its heap limit. Exhausting a real worker's heap can
    // take the whole process down when the last allocation happens inside a native call.
    const oom = Object.assign(new Error('Worker terminated due to reaching memory limit: JS heap out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' });
    const run = vi.spyOn(Piscina.prototype, 'run').mockRejectedValue(oom);
    const first = await t.app.inject(png(card.uuid));
    expect(run).toHaveBeenCalledTimes(1);
    expect(first.statusCode).toBe(503);
    expect(first.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(first.headers['retry-after'])).toBeGreaterThanOrEqual(60);
    expect(first.json().detail).toMatch(/memory/);
    const again = await t.app.inject(png(card.uuid));
    expect(again.statusCode).toBe(503);
    expect(run).toHaveBeenCalledTimes(1);
  });
});
