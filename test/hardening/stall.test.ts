/**
 * One event loop serves everyone: a heavy but legal request (a full export read at full speed) gives
 * way between pages, so a health check never waits behind it for long. SQLite only: its queries run
 * on the event loop, where a stall would show.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const COUNT = 30_000;

describe('heavy downloads and the event loop', () => {
  let t: TestContext;
  beforeAll(async () => {
    const many = Array.from({ length: COUNT }, (_, i) => entry(`Entry number ${i} of a large database, with a few words more.`, 1_600_000_000 + i));
    t = await createTestApp({ entries: many });
  });
  afterAll(() => t.close());

  it.each(['csv', 'json', 'txt'])('keeps the loop free during full %s exports', async (format) => {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const downloads = [1, 2].map(() => t.app.inject({ url: `/api/v1/nonsense?format=${format}` }));
    const health: number[] = [];
    let done = false;
    void Promise.all(downloads).then(() => (done = true));
    while (!done) {
      const started = performance.now();
      await t.app.inject('/healthz');
      health.push(performance.now() - started);
      await sleep(10); // a prober's pace; it also lets the loop turn
    }
    delay.disable();
    for (const res of await Promise.all(downloads)) {
      expect(res.statusCode).toBe(200);
      if (format === 'csv') expect(res.body.split('\r\n').filter(Boolean)).toHaveLength(COUNT + 1);
    }
    // Without the pauses between pages, the two downloads held the loop for their whole length.
    expect(health.length).toBeGreaterThan(5);
    expect(delay.max / 1e6, `event loop held for ${(delay.max / 1e6).toFixed(0)} ms`).toBeLessThan(250);
  });
});
