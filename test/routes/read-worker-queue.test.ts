/**
 * The read workers' queue is bounded (READ_WORKER_QUEUE): while that many tasks wait, a new
 * export, site search or admin search is refused at once with 503 and Retry-After; the later pages
 * of an export already started are never refused; a client reading slowly holds no place.
 *
 * The worker is held busy by a gate in front of its pool, so the queue is full exactly as long as
 * the test wants; the pages themselves are read by the real worker.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXPORT_PAGE_SIZE } from '../../src/formats/export.ts';
import type { ReadWorkers } from '../../src/services/read-workers/index.ts';
import type { TaskPool } from '../../src/services/worker-pool/index.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const sqlite = process.env.TEST_DATABASE !== 'postgres';

/** gate holds every task of `workers` before its pool until the returned function is called. */
function gate(workers: ReadWorkers): () => void {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const { pool } = workers as unknown as { pool: TaskPool };
  const real = pool.run.bind(pool);
  const spy = vi.spyOn(pool, 'run').mockImplementation(async (...task) => (await opened, real(...task)));
  return () => {
    open();
    spy.mockRestore();
  };
}

describe.runIf(sqlite)('the read worker queue', () => {
  let t: TestContext;
  let auth: { authorization: string };
  const ENTRIES = 2 * EXPORT_PAGE_SIZE + 100;
  const metric = async (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec((await t.app.inject('/metrics')).body)?.[1]);

  beforeAll(async () => {
    // No task may wait: a new request is refused while one runs.
    t = await createTestApp({
      env: { READ_WORKER_QUEUE: '0', READ_WORKER_THREADS: '1' },
      entries: Array.from({ length: ENTRIES }, (_, n) => entry(`Queued ${n}: a sock and a kettle`, 1_700_600_000 + n)),
    });
    auth = { authorization: `Bearer ${await t.storage.tokens.create('mod')}` };
  });
  afterAll(() => t.close());

  it('refuses exports and searches with 503 and Retry-After while the queue is full, then serves them again', async () => {
    const workers = t.app.readWorkers!;
    const refusedBefore = await metric('nonsense_read_worker_refused_total');
    const release = gate(workers);
    // A search that waits at the gate: the queue is full.
    const first = t.app.inject({ url: '/search?q=sock', headers: { accept: 'text/html' } });
    await expect.poll(() => workers.queued).toBe(1);
    expect(await metric('nonsense_read_worker_tasks')).toBe(1);

    const api = await t.app.inject('/api/v1/nonsense?format=csv');
    expect(api.statusCode).toBe(503);
    expect(api.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(api.headers['retry-after']).toMatch(/^[1-9]\d?$/);
    expect(api.json()).toMatchObject({ status: 503, detail: expect.stringMatching(/try again in \d+ s/) });
    const site = await t.app.inject({ url: '/search?q=kettle', headers: { accept: 'text/html' } });
    expect(site.statusCode).toBe(503);
    expect(site.headers['content-type']).toMatch(/^text\/html/);
    expect(site.headers['retry-after']).toMatch(/^[1-9]\d?$/);
    const admin = await t.app.inject({ url: '/api/v1/admin/nonsense?q=kettle', headers: auth });
    expect(admin.statusCode).toBe(503);
    expect(await metric('nonsense_read_worker_refused_total')).toBe(refusedBefore + 3);

    release();
    expect((await first).statusCode).toBe(200);
    expect(workers.queued).toBe(0);
    const again = await t.app.inject('/api/v1/nonsense?format=csv');
    expect(again.statusCode).toBe(200);
    expect(again.body.trim().split('\r\n')).toHaveLength(ENTRIES + 1);
    expect((await t.app.inject({ url: '/api/v1/admin/nonsense?q=kettle', headers: auth })).statusCode).toBe(200);
  });

  it('finishes an export once started: its later pages wait in a full queue, never refused', async () => {
    const workers = t.app.readWorkers!;
    const file = await workers.open('txt', {}, EXPORT_PAGE_SIZE, new Map());
    const decoder = new TextDecoder();
    // The first page; the second is read ahead meanwhile, before the gate.
    let text = decoder.decode((await file.next()).value as Uint8Array);
    await expect.poll(() => workers.queued).toBe(0);
    const release = gate(workers);
    const search = t.app.inject({ url: '/search?q=kettle', headers: { accept: 'text/html' } });
    await expect.poll(() => workers.queued).toBe(1);
    // The queue is full: a new export is refused, but this one's third page joins the queue.
    expect((await t.app.inject('/api/v1/nonsense?format=json')).statusCode).toBe(503);
    const rest = (async () => {
      for (let next = await file.next(); !next.done; next = await file.next()) text += decoder.decode(next.value);
    })();
    await expect.poll(() => workers.queued).toBe(2);
    release();
    await rest;
    expect(text.trim().split('\n')).toHaveLength(ENTRIES);
    expect((await search).statusCode).toBe(200);
    expect(workers.queued).toBe(0);
  });

  it('holds no place for a client that reads slowly', async () => {
    const workers = t.app.readWorkers!;
    const file = await workers.open('csv', {}, EXPORT_PAGE_SIZE, new Map());
    await file.next();
    // The next page is read ahead and waits in memory; the worker is free for others.
    await expect.poll(() => workers.queued).toBe(0);
    expect((await t.app.inject('/api/v1/nonsense?format=txt')).statusCode).toBe(200);
    await file.return(undefined);
  });

  it('gives the queue back when a task fails', async () => {
    const workers = t.app.readWorkers!;
    const { pool } = workers as unknown as { pool: TaskPool };
    const spy = vi.spyOn(pool, 'run').mockRejectedValue(new Error('no such table: entries'));
    try {
      await expect(workers.open('csv', {}, EXPORT_PAGE_SIZE, new Map())).rejects.toThrow(/no such table/);
    } finally {
      spy.mockRestore();
    }
    expect(workers.queued).toBe(0);
  });
});

describe.runIf(sqlite)('the read workers after an idle spell', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ env: { READ_WORKER_THREADS: '2' }, entries: [entry('A sock and a kettle', 1_700_600_000)] });
  });
  afterAll(() => t.close());

  it('start every thread with the first task, so that a burst does not wait for the second to start', async () => {
    const { pool } = t.app.readWorkers! as unknown as { pool: TaskPool };
    const threads = async () => ((await (pool as unknown as { started: Promise<{ threads: unknown[] }> | null }).started)?.threads.length ?? 0);
    expect(await threads()).toBe(0);
    expect((await t.app.inject('/api/v1/nonsense?format=csv')).statusCode).toBe(200);
    await expect.poll(threads).toBe(2);
  });
});
