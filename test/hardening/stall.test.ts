/**
 * One event loop serves everyone: a heavy but legal request (a full export read at full speed, a
 * whole OData feed with the most expensive filter and order the limits allow) gives way between
 * pages, so a health check never waits behind it for long. SQLite only: its statements cannot yield,
 * so one run on the event loop would show here as a stall; PostgreSQL's driver waits without holding it.
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
import { compilePendingSchemas } from '../../src/runtime/compile-later.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const COUNT = 30_000;

/**
 * download reads a URL to its end, keeping only its status, its length, how many CRLFs it had, and
 * its last bytes (where a feed cut short would show).
 */
function download(url: string): Promise<{ status: number; bytes: number; crlf: number; tail: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let bytes = 0;
        let crlf = 0;
        let lastWasCr = false;
        let tail = Buffer.alloc(0);
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (lastWasCr && chunk[0] === 0x0a) crlf++;
          for (let i = chunk.indexOf('\r\n'); i !== -1; i = chunk.indexOf('\r\n', i + 2)) crlf++;
          lastWasCr = chunk[chunk.length - 1] === 0x0d;
          tail = Buffer.concat([tail, chunk.subarray(-64)]).subarray(-64);
        });
        res.on('end', () => resolve({ status: res.statusCode!, bytes, crlf, tail: tail.toString('latin1') }));
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

  /**
   * whileProbed starts the downloads of `urls` at once and probes /healthz until all have ended;
   * returns their results, the probes' times and the event loop's longest delay meanwhile, in ms.
   */
  async function whileProbed(urls: string[]) {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const downloads = urls.map((url) => download(url));
    const health: number[] = [];
    let done = false;
    void Promise.all(downloads).then(
      () => (done = true),
      () => (done = true),
    );
    while (!done) {
      const started = performance.now();
      await t.app.inject('/healthz');
      health.push(performance.now() - started);
      await sleep(10); // a prober's pace; it also lets the loop turn
    }
    delay.disable();
    return { results: await Promise.all(downloads), health, maxDelayMs: delay.max / 1e6 };
  }

  it.each(['csv', 'json', 'txt'])('keeps the loop free during full %s exports', async (format) => {
    const { results, health, maxDelayMs } = await whileProbed([1, 2].map(() => `${base}/api/v1/nonsense?format=${format}`));
    for (const res of results) {
      expect(res.status).toBe(200);
      expect(res.bytes).toBeGreaterThan(COUNT * 50);
      if (format === 'csv') expect(res.crlf).toBe(COUNT + 1);
    }
    // Without the pauses between pages, the two downloads held the loop for their whole length.
    expect(health.length).toBeGreaterThan(5);
    expect(maxDelayMs, `event loop held for ${maxDelayMs.toFixed(0)} ms`).toBeLessThan(250);
  });

  it('keeps the loop free while hostile OData feeds are read', { timeout: 60_000 }, async () => {
    // Each filter and order below is legal, and each makes SQLite scan or sort the whole table, for a
    // page or for every page; the last builds 32 copies of every text per row for its filter and again
    // for its order, as much work per row as the node limits allow, and sorts every row by 2 kB keys
    // to skip most of them. On the event loop, each such statement held it for as long as it ran.
    const wide = (depth: number, leaf: string): string => (depth === 0 ? leaf : `concat(${wide(depth - 1, leaf)},${wide(depth - 1, leaf)})`);
    const nested = ['zebra', 'quokka', 'number 12345 ', 'wombat', 'NUMBER 299'].map(
      (needle) => `substringof('${needle}',concat(concat(nonsense,tolower(nonsense)),concat(toupper(nonsense),trim(nonsense))))`,
    );
    const absent = Array.from({ length: 25 }, (_, i) => `substringof('absent ${i}',nonsense)`);
    const feeds = [
      // The cheap indexed branch answers the first pages; past it, every row is tested.
      `all=true&$filter=${encodeURIComponent(`timestamp lt ${1_600_000_000 + COUNT / 10} or (${nested.join(' or ')})`)}`,
      // Every page sorts the whole table again.
      'all=true&$orderby=nonsense',
      // Nothing matches: the first page scans the whole table.
      `all=true&$filter=${encodeURIComponent(absent.join(' or '))}`,
      `all=true&$filter=${encodeURIComponent(`indexof(${wide(5, 'tolower(nonsense)')},'zq') eq -1`)}&$orderby=${encodeURIComponent(`tolower(${wide(5, 'nonsense')}) desc`)}&$skip=${COUNT - 100}&$format=json`,
    ];
    const { results, health, maxDelayMs } = await whileProbed(feeds.map((query) => `${base}/odata/v2/nonsense_list?${query}`));
    for (const [i, res] of results.slice(0, 3).entries()) {
      expect(res.status, feeds[i]).toBe(200);
      expect(res.tail, feeds[i]).toMatch(/<\/feed>\n$/);
    }
    // The sorted feed holds every entry; the first, the tenth before its bound and its few matches.
    expect(results[1]!.bytes).toBeGreaterThan(COUNT * 500);
    expect(results[0]!.bytes).toBeGreaterThan((COUNT / 10) * 500);
    // The heaviest is at about the time limit: answered (its last hundred entries), or refused past the limit.
    const heaviest = results[3]!;
    if (heaviest.status === 200) expect(heaviest.tail).toMatch(/\}\]\}\}\n$/);
    else expect([heaviest.status, heaviest.tail]).toEqual([400, expect.stringMatching(/leave out \$inlinecount\."\}\}\}\n$/)]);
    expect(health.length).toBeGreaterThan(5);
    expect(maxDelayMs, `event loop held for ${maxDelayMs.toFixed(0)} ms`).toBeLessThan(250);
  });
});
