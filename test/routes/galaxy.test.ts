/**
 * GET /api/v1/nonsense/galaxy through HTTP, on both engines: 503 before the first layout, the CSV and
 * JSON shapes the public galaxy pages read (parsed back with papaparse, as they do), served from the
 * stored answer (also by a process that computed nothing) with the changes since applied: hidden and
 * deleted entries gone at once, new ones once placed; ETags and 304, HEAD, CORS, the 400 for other
 * formats, the read budget and the OpenAPI document.
 */
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { openDatabase } from '../../src/db/database.ts';
import { GalaxyComputer } from '../../src/services/galaxy/compute.ts';
import { createStorage } from '../../src/storage/index.ts';
import { families } from '../galaxy/corpus.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const HEADER = ['uuid', 'umap_dim_0', 'umap_dim_1', 'umap_dim_2', 'point_size'];

describe('GET /api/v1/nonsense/galaxy', () => {
  let t: TestContext;
  const entries = families(12, 3).map((f) => entry(f.text));
  const get = (query = '', headers: Record<string, string> = {}) => t.app.inject({ url: `/api/v1/nonsense/galaxy${query}`, headers });

  beforeAll(async () => {
    t = await createTestApp({ entries });
  });
  afterAll(() => t.close());

  it('answers 503 with Retry-After and a clear detail before the first layout', async () => {
    const res = await get();
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.json().detail).toMatch(/not been laid out yet.*nonsense galaxy/);
  });

  it('serves one CSV row per visible entry, with the header the galaxy pages expect', async () => {
    await new GalaxyComputer(t.database).run();
    const res = await get('', { origin: 'https://galaxy.example' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.body.split('\r\n')[0]).toBe(HEADER.join(','));
    const parsed = Papa.parse<Record<string, string>>(res.body.trim(), { header: true });
    expect(parsed.errors).toEqual([]);
    expect(parsed.meta.fields).toEqual(HEADER);
    expect(parsed.data.map((row) => row.uuid).sort()).toEqual(entries.map((e) => e.uuid).sort());
    for (const row of parsed.data) {
      expect(row.uuid).toMatch(/^[0-9a-f-]{36}$/);
      const [x, y, z, size] = HEADER.slice(1).map((field) => parseFloat(row[field]!));
      for (const value of [x!, y!, z!]) {
        expect(Number.isFinite(value)).toBe(true);
        expect(Math.abs(value)).toBeLessThanOrEqual(10);
      }
      expect(size).toBeGreaterThanOrEqual(0.05);
      expect(size).toBeLessThanOrEqual(0.6);
    }
    // Centred on zero and spread on every axis, as the pages' cameras expect.
    for (const field of HEADER.slice(1, 4)) {
      const values = parsed.data.map((row) => parseFloat(row[field]!));
      const span = Math.max(...values) - Math.min(...values);
      expect(span).toBeGreaterThan(10);
      expect(span).toBeLessThanOrEqual(20);
      expect(Math.abs((Math.max(...values) + Math.min(...values)) / 2)).toBeLessThan(2);
    }
  });

  it('parses with papaparse as the galaxy pages call it into one row per star, none empty', async () => {
    // The pages call Papa.parse(text, { header: true }) on the body as it is: a line break after the
    // last record would be one more row, with an empty uuid and NaN coordinates.
    const res = await get();
    expect(res.body.endsWith('\n')).toBe(false);
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    const parsed = Papa.parse<Record<string, string>>(res.body, { header: true });
    expect(parsed.errors).toEqual([]);
    expect(parsed.data).toHaveLength(entries.length);
    for (const row of parsed.data) {
      expect(row.uuid).toMatch(/^[0-9a-f-]{36}$/);
      for (const field of HEADER.slice(1)) expect(Number.isFinite(parseFloat(row[field]!)), field).toBe(true);
    }
  });

  it('serves the stored answer: the stars are not read from the database again, also by a new process', async () => {
    const layout = (await t.storage.galaxy.layout())!;
    const answer = (await t.storage.galaxy.answer(layout.fit))!;
    expect(answer).toMatchObject({ stars: entries.length, chunks: 1 });
    const before = await get();
    // A marked star written into the stored chunk shows that the body comes from it.
    const marked = before.body.replace(entries[5]!.uuid, entries[5]!.uuid.replace(/.$/, 'f'));
    const csv = await t.database.db.selectFrom('galaxy_answer_chunks').select('bytes').where('answer', '=', answer.id).where('format', '=', 'csv').executeTakeFirstOrThrow();
    const markedBytes = Buffer.from(marked.slice(HEADER.join(',').length), 'latin1');
    const setChunk = (bytes: Uint8Array) =>
      t.database.db.updateTable('galaxy_answer_chunks').set({ bytes }).where('answer', '=', answer.id).where('format', '=', 'csv').execute();
    await setChunk(markedBytes);
    const database = await openDatabase(t.config.database);
    const restarted = await buildApp({ config: t.config, storage: createStorage(database), logger: false });
    try {
      const res = await restarted.inject('/api/v1/nonsense/galaxy');
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(marked);
      expect(res.headers.etag).toBe(before.headers.etag);
    } finally {
      await setChunk(csv.bytes);
      await restarted.close();
      await database.close();
    }
  });

  it('walks the database instead when GALAXY_CACHE_BYTES cannot hold the changes since the stored answer', async () => {
    const database = await openDatabase(t.config.database);
    const walking = await buildApp({ config: { ...t.config, galaxyCacheBytes: 0 }, storage: createStorage(database), logger: false });
    try {
      await setState(t.storage, entries[2]!.uuid, 'hidden');
      await setState(t.storage, entries[2]!.uuid, 'visible');
      const [held, walked] = [await get(), await walking.inject('/api/v1/nonsense/galaxy')];
      expect(walked.statusCode).toBe(200);
      expect(walked.headers.etag).toBe(held.headers.etag);
      expect(walked.body.split('\r\n').sort()).toEqual(held.body.split('\r\n').sort());
      expect(walked.body.endsWith('\n')).toBe(false);
      expect(Papa.parse(walked.body, { header: true }).data).toHaveLength(entries.length);
    } finally {
      await walking.close();
      await database.close();
    }
  });

  it('serves the same stars as JSON objects with numbers', async () => {
    const csv = Papa.parse<Record<string, string>>((await get()).body.trim(), { header: true }).data;
    const res = await get('?format=json');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const list = res.json<Record<string, unknown>[]>();
    expect(list.map((star) => Object.keys(star))).toEqual(list.map(() => HEADER));
    expect(list).toEqual(csv.map((row) => ({ uuid: row.uuid, ...Object.fromEntries(HEADER.slice(1).map((f) => [f, parseFloat(row[f]!)])) })));
  });

  it('reports what it holds of the changes since the stored answer in /metrics, within GALAXY_CACHE_BYTES', async () => {
    const held = async () => {
      await get();
      const metrics = (await t.app.inject('/metrics')).body;
      return {
        bytes: Number(/^nonsense_cache_bytes\{cache="galaxy"\} (\d+)$/m.exec(metrics)?.[1]),
        items: Number(/^nonsense_cache_items\{cache="galaxy"\} (\d+)$/m.exec(metrics)?.[1]),
      };
    };
    // The entry hidden and shown again by the test before: one star served from the change log.
    const now = await held();
    expect(now.items).toBe(1);
    expect(now.bytes).toBeGreaterThan(0);
    expect(now.bytes).toBeLessThanOrEqual(t.config.galaxyCacheBytes);
    await setState(t.storage, entries[6]!.uuid, 'hidden');
    expect((await held()).items).toBe(1);
    await setState(t.storage, entries[6]!.uuid, 'visible');
    expect((await held()).items).toBe(2);
  });

  it('answers 400 for any other format, naming the allowed ones', async () => {
    for (const format of ['xml', 'txt', 'CSV', '']) {
      const res = await get(`?format=${format}`);
      expect(res.statusCode, format).toBe(400);
      expect(res.json()).toMatchObject({ parameter: 'format', detail: `The parameter "format" must be one of: csv, json; got "${format}".` });
    }
  });

  it('revalidates with its ETag, which changes when an entry is hidden or deleted (and the entry is gone at once)', async () => {
    const first = await get();
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"galaxy-/);
    const again = await get('', { 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect((await get('?format=json', { 'if-none-match': etag })).statusCode).toBe(200);

    await setState(t.storage, entries[0]!.uuid, 'hidden');
    await t.storage.entries.remove(entries[1]!.uuid, 'test');
    const after = await get('', { 'if-none-match': etag });
    expect(after.statusCode).toBe(200);
    expect(after.headers.etag).not.toBe(etag);
    expect(after.body).not.toContain(entries[0]!.uuid);
    expect(after.body).not.toContain(entries[1]!.uuid);
    expect(after.body.trim().split('\r\n')).toHaveLength(entries.length - 1);
    await setState(t.storage, entries[0]!.uuid, 'visible');
  });

  it('shows entries added later once the computation placed them, under a new ETag', async () => {
    const before = await get();
    const added = entry('Breaking news: the sleepy kitten napped on the scratching post under the sofa. Typical.');
    await t.storage.entries.insertEntries([added]);
    expect((await get()).body).not.toContain(added.uuid);
    expect((await new GalaxyComputer(t.database).run()).action).toBe('placed');
    // The endpoint reads the layout row at most once a second, then the new layout in the background.
    await expect.poll(async () => (await get()).body, { timeout: 5000, interval: 100 }).toContain(added.uuid);
    expect((await get()).headers.etag).not.toBe(before.headers.etag);
  });

  it('is served alike by another instance of the same database, which computed nothing', async () => {
    const database = await openDatabase(t.config.database);
    const other = await buildApp({ config: t.config, storage: createStorage(database), logger: false });
    try {
      for (const format of ['csv', 'json']) {
        const [mine, theirs] = [await get(`?format=${format}`), await other.inject(`/api/v1/nonsense/galaxy?format=${format}`)];
        expect(theirs.statusCode).toBe(200);
        expect(theirs.body).toBe(mine.body);
        expect(theirs.headers.etag).toBe(mine.headers.etag);
      }
    } finally {
      await other.close();
      await database.close();
    }
  });

  it('is not mistaken for an entry uuid, answers HEAD, and is in the OpenAPI document', async () => {
    expect((await t.app.inject('/api/v1/nonsense/galaxy/')).statusCode).toBe(200);
    const head = await t.app.inject({ method: 'HEAD', url: '/api/v1/nonsense/galaxy?format=json' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(head.headers.etag).toBe((await get('?format=json')).headers.etag);
    expect(head.body).toBe('');
    const doc = (await t.app.inject('/openapi.json')).json();
    const operation = doc.paths['/api/v1/nonsense/galaxy'].get;
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '304', '400', '503']));
    expect(Object.keys(operation.responses['200'].content)).toEqual(['text/csv', 'application/json']);
    expect(operation.parameters).toContainEqual(expect.objectContaining({ name: 'format', in: 'query' }));
  });
});

describe('the galaxy and the read budget', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_READ: '3/1m' } });
  });
  afterAll(() => t.close());

  it('counts against RATE_LIMIT_READ', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await t.app.inject({ url: '/api/v1/nonsense/galaxy', remoteAddress: '192.0.2.77' })).statusCode);
    expect(statuses).toEqual([503, 503, 503, 429]);
  });
});
