/**
 * The export worker's queue is bounded by requests (EXPORT_WORKER_QUEUE): with every place taken, a
 * new export, site search or admin search is refused at once with 503 and Retry-After, an export
 * once started is finished, and every place is given back, by a file never read too.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXPORT_PAGE_SIZE } from '../../src/formats/export.ts';
import { createTestApp, entry, freePort, type TestContext } from '../helper.ts';

const sqlite = process.env.TEST_DATABASE !== 'postgres';

describe.runIf(sqlite)('the export worker queue', () => {
  let t: TestContext;
  let auth: { authorization: string };
  const refused = async () => {
    const text = (await t.app.inject('/metrics')).body;
    return Number(/^nonsense_export_worker_refused_total (\d+)$/m.exec(text)?.[1]);
  };
  const held = async () => Number(/^nonsense_export_worker_requests (\d+)$/m.exec((await t.app.inject('/metrics')).body)?.[1]);

  beforeAll(async () => {
    // No place to wait: one request at a time is read.
    t = await createTestApp({
      env: { EXPORT_WORKER_QUEUE: '0' },
      entries: Array.from({ length: 2 * EXPORT_PAGE_SIZE + 100 }, (_, n) => entry(`Queued ${n}: a sock and a kettle`, 1_700_600_000 + n)),
    });
    auth = { authorization: `Bearer ${await t.storage.tokens.create('mod')}` };
  });
  afterAll(() => t.close());

  it('refuses exports and searches with 503 and Retry-After while every place is taken, then serves them again', async () => {
    const workers = t.app.exportWorkers!;
    const before = await refused();
    // An export whose first page is read and whose file nobody reads yet holds the one place.
    const holding = await workers.open('csv', {}, EXPORT_PAGE_SIZE, new Map());
    expect(workers.requests).toBe(1);
    expect(await held()).toBe(1);

    const api = await t.app.inject('/api/v1/nonsense?format=csv');
    expect(api.statusCode).toBe(503);
    expect(api.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(api.headers['retry-after']).toMatch(/^[1-9]\d?$/);
    expect(api.json()).toMatchObject({ status: 503, detail: expect.stringMatching(/try again in \d+ s/) });

    const site = await t.app.inject({ url: '/search?q=sock', headers: { accept: 'text/html' } });
    expect(site.statusCode).toBe(503);
    expect(site.headers['content-type']).toMatch(/^text\/html/);
    expect(site.headers['retry-after']).toMatch(/^[1-9]\d?$/);

    const admin = await t.app.inject({ url: '/api/v1/admin/nonsense?q=kettle', headers: auth });
    expect(admin.statusCode).toBe(503);
    expect(await refused()).toBe(before + 3);

    // A file returned before its first chunk gives its place back.
    await holding.return(undefined);
    expect(workers.requests).toBe(0);
    const again = await t.app.inject('/api/v1/nonsense?format=csv');
    expect(again.statusCode).toBe(200);
    expect(again.body.trim().split('\r\n')).toHaveLength(2 * EXPORT_PAGE_SIZE + 101);
    expect((await t.app.inject({ url: '/api/v1/admin/nonsense?q=kettle', headers: auth })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/search?q=sock', headers: { accept: 'text/html' } })).statusCode).toBe(200);
    expect(workers.requests).toBe(0);
  });

  it('finishes an export once started, its later pages never refused, and holds its place until its file is read', async () => {
    const workers = t.app.exportWorkers!;
    const file = await workers.open('txt', {}, EXPORT_PAGE_SIZE, new Map());
    const decoder = new TextDecoder();
    let text = decoder.decode((await file.next()).value as Uint8Array);
    // Mid-file, a new request finds no place.
    expect((await t.app.inject('/api/v1/nonsense?format=json')).statusCode).toBe(503);
    for (let next = await file.next(); !next.done; next = await file.next()) text += decoder.decode(next.value);
    expect(text.trim().split('\n')).toHaveLength(2 * EXPORT_PAGE_SIZE + 100);
    expect(workers.requests).toBe(0);
    expect((await t.app.inject('/api/v1/nonsense?format=json')).statusCode).toBe(200);
  });

  it('gives the place back when the client goes away before the first byte, or mid-file', async () => {
    const workers = t.app.exportWorkers!;
    const port = await freePort();
    // Listening until the app closes (afterAll).
    await t.app.listen({ port, host: '127.0.0.1' });
    for (const early of [true, false]) {
      const socket = net.connect(port, '127.0.0.1');
      const open = workers.open.bind(workers);
      // Gone once the first page is read, before the response starts; or after its first bytes.
      const opened = vi.spyOn(workers, 'open').mockImplementation(async (...args) => {
        const file = await open(...args);
        if (early) {
          socket.destroy();
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return file;
      });
      socket.write('GET /api/v1/nonsense?format=csv HTTP/1.1\r\nHost: localhost\r\n\r\n');
      if (!early) {
        await new Promise((resolve) => socket.once('data', resolve));
        socket.destroy();
      }
      await expect.poll(() => opened.mock.calls.length).toBe(1);
      await expect.poll(() => workers.requests, { timeout: 5000 }).toBe(0);
      opened.mockRestore();
    }
    expect((await t.app.inject('/api/v1/nonsense?format=txt')).statusCode).toBe(200);
  });

  it('gives the place back when the first page fails', async () => {
    const workers = t.app.exportWorkers!;
    // The first task fails, as it does when the table is gone.
    const run = (workers as unknown as { run: (...args: unknown[]) => Promise<unknown> }).run;
    (workers as unknown as { run: () => Promise<never> }).run = () => Promise.reject(new Error('no such table: entries'));
    try {
      await expect(workers.open('csv', {}, EXPORT_PAGE_SIZE, new Map())).rejects.toThrow(/no such table/);
    } finally {
      (workers as unknown as { run: typeof run }).run = run;
    }
    expect(workers.requests).toBe(0);
  });
});
