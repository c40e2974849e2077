/**
 * The whole feed (`all=true`) and the event loop: it gives way to other requests between chunks, so
 * a health check never waits long behind it, and it reads from the database only as fast as the
 * client reads (backpressure), so a slow client costs no memory.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, entry, freePort, type TestContext } from '../helper.ts';

const COUNT = 8_000;
// Long texts, so that the whole feed (about 10 MB of Atom) is more than a socket's buffers hold.
const FILLER = ' and so on'.repeat(60);

describe('OData all=true and the event loop', () => {
  let t: TestContext;
  let port: number;
  beforeAll(async () => {
    const many = Array.from({ length: COUNT }, (_, i) => entry(`Entry number ${i} of a large feed, with <markup> & a few words more${FILLER}.`, 1_600_000_000 + i));
    t = await createTestApp({ entries: many });
    port = await freePort();
    await t.app.listen({ port, host: '127.0.0.1' });
  });
  afterAll(() => t.close());

  it.each(['atom', 'json'])('gives way to other work between chunks of a %s feed', async (format) => {
    // In-process, the response takes every chunk at once, so only the feed's own pauses let the event
    // loop turn; a ticker counts the turns. Without the pauses it counted none or one.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const res = await t.app.inject(`/odata/v2/nonsense_list?all=true&$format=${format}`);
    delay.disable();
    ticking = false;
    expect(res.statusCode).toBe(200);
    expect(res.body.split(format === 'json' ? '"__metadata"' : '</entry>')).toHaveLength(COUNT + 1);
    // 120 chunks of 100 entities, with a pause before each but the first of every page of 500.
    expect(turns).toBeGreaterThanOrEqual(COUNT / 100 - 5);
    // Generous: the shared test machine's load shows up here as well.
    expect(delay.max / 1e6, `event loop held for ${(delay.max / 1e6).toFixed(0)} ms`).toBeLessThan(1000);
  });

  it('answers /healthz while a feed is read at full speed over a socket', async () => {
    // The client counts entries as the chunks come and keeps nothing, so that its own work stays small.
    const feed = new Promise<{ status: number; entries: number }>((resolve, reject) => {
      http.get(`http://127.0.0.1:${port}/odata/v2/nonsense_list?all=true`, { agent: false }, (res) => {
        let entries = 0;
        let carry = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const text = carry + chunk;
          for (let at = text.indexOf('</entry>'); at !== -1; at = text.indexOf('</entry>', at + 8)) entries++;
          carry = text.slice(-7);
        });
        res.on('end', () => resolve({ status: res.statusCode!, entries }));
        res.on('error', reject);
      }).on('error', reject);
    });
    let done = false;
    void feed.finally(() => (done = true));
    let answered = 0;
    while (!done) {
      expect((await t.app.inject('/healthz')).statusCode).toBe(200);
      answered++;
      await sleep(10); // a prober's pace: what is measured is that /healthz answers all along
    }
    const { status, entries } = await feed;
    expect(status).toBe(200);
    expect(entries).toBe(COUNT);
    expect(answered).toBeGreaterThan(5);
  });

  it('reads pages only as fast as a slow client takes them', async () => {
    // The pages of the walk are read by a read worker on an SQLite file, else on the event loop.
    let pages = 0;
    const workers = t.app.readWorkers;
    const query = t.storage.entryQuery;
    const readPage = query.listPage.bind(query);
    const readInWorker = workers?.odata.bind(workers);
    const spy =
      workers === null
        ? vi.spyOn(query, 'listPage').mockImplementation(async (...args) => (pages++, readPage(...args)))
        : vi.spyOn(workers, 'odata').mockImplementation((async (...args: Parameters<typeof workers.odata>) => {
            if (args[0].kind === 'page') pages++;
            return readInWorker!(...args);
          }) as typeof workers.odata);
    try {
      const settled = await new Promise<number>((resolve, reject) => {
        const request = http.get(`http://127.0.0.1:${port}/odata/v2/nonsense_list?all=true`, { agent: false }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
          // A client that stops reading: the server may fill the socket's buffers, then must wait.
          res.pause();
          // Wait until the walk has stood still for half a second (at most 15 s on a busy machine).
          let last = -1;
          let still = 0;
          const poll = setInterval(() => {
            still = pages === last ? still + 1 : 0;
            last = pages;
            if (still >= 5 || Date.now() - started > 15_000) {
              clearInterval(poll);
              resolve(pages);
              request.destroy();
            }
          }, 100);
        });
        const started = Date.now();
        request.on('error', () => {});
      });
      // 16 pages of 500 in all: the walk stopped once the buffers were full, long before the end.
      expect(settled).toBeGreaterThan(0);
      expect(settled).toBeLessThan(COUNT / 500);
    } finally {
      spy.mockRestore();
    }
  });
});
