/**
 * One event loop serves everyone: a heavy but legal request (a full export read at full speed) gives
 * way between pages, so a health check never waits behind it for long. SQLite only: its queries run
 * on the event loop, where a stall would show.
 *
 * The downloads go through a real socket to a client that counts what streams in and keeps none of
 * it, as a real client does. Through `inject`, the test held the whole files itself (two of 4 MB
 * each): collecting them cost this process 15-20 ms scavenges, and joining them at the end a long
 * turn of the loop, 30-80 ms that the test counted as the service's.
 */
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compilePendingSchemas } from '../../src/schemas/compile-later.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const COUNT = 30_000;

/** download reads a URL to its end, keeping only its status, its length and how many CRLFs it had. */
function download(url: string): Promise<{ status: number; bytes: number; crlf: number }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let bytes = 0;
        let crlf = 0;
        let lastWasCr = false;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (lastWasCr && chunk[0] === 0x0a) crlf++;
          for (let i = chunk.indexOf('\r\n'); i !== -1; i = chunk.indexOf('\r\n', i + 2)) crlf++;
          lastWasCr = chunk[chunk.length - 1] === 0x0d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, bytes, crlf }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

describe('heavy downloads and the event loop', () => {
  let t: TestContext;
  let base: string;
  beforeAll(async () => {
    const many = Array.from({ length: COUNT }, (_, i) => entry(`Entry number ${i} of a large database, with a few words more.`, 1_600_000_000 + i));
    t = await createTestApp({ entries: many });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    // As `serve` does after listening (server.ts): the routes' schemas compiled in the background.
    // Left to the first export, compiling them held the loop 50-80 ms on an idle host, more on a
    // loaded one, which this test counted against the downloads.
    await compilePendingSchemas();
  });
  afterAll(() => t.close());

  it.each(['csv', 'json', 'txt'])('keeps the loop free during full %s exports', async (format) => {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const downloads = [1, 2].map(() => download(`${base}/api/v1/nonsense?format=${format}`));
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
      expect(res.status).toBe(200);
      expect(res.bytes).toBeGreaterThan(COUNT * 50);
      if (format === 'csv') expect(res.crlf).toBe(COUNT + 1);
    }
    // Without the pauses between pages, the two downloads held the loop for their whole length.
    expect(health.length).toBeGreaterThan(5);
    expect(delay.max / 1e6, `event loop held for ${(delay.max / 1e6).toFixed(0)} ms`).toBeLessThan(250);
  });
});
