import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreFormula } from '../../src/formats/csv.ts';
import { createTestApp, entry, setState, type TestContext } from '../helper.ts';

const E = (n: number, text: string) => entry(text, 1_000 + n * 10, `eeeeeeee-0000-4000-8000-${String(n).padStart(12, '0')}`);
const entries = [
  E(1, 'The Cat sat.'),
  E(2, 'A CAFÉ for geese'),
  E(3, 'Line one\nline two about a cat'),
  E(4, '=HYPERLINK("http://evil.example","click")'),
  E(5, 'Wildcards * and ? and [brackets] and 100% _under_'),
  E(6, 'Feed the $ANIMAL$, said $AUTHOR$'),
  E(7, "Robert'); DROP TABLE entries;-- the goose"),
  E(8, 'Hidden cat'),
  E(9, 'Straße der Enten'),
];

describe('GET /api/v1/nonsense (export)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['newt'] }], entries });
    await setState(t.storage, entries[7]!.uuid, 'hidden');
  });
  afterAll(() => t.close());

  const get = (query: string) => t.app.inject(`/api/v1/nonsense${query}`);
  const uuidsOf = (body: string) => (JSON.parse(body) as { uuid: string }[]).map((e) => e.uuid.slice(-2));

  it('exports CSV by default, as an attachment, in timestamp order, without hidden entries', async () => {
    const res = await get('');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="nonsense.csv"');
    expect(res.body.charCodeAt(0)).not.toBe(0xfeff);
    const rows = parse(res.body, { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0]!)).toEqual(['uuid', 'nonsense', 'original_nonsense', 'timestamp']);
    expect(rows.map((r) => r.uuid!.slice(-2))).toEqual(['01', '02', '03', '04', '05', '06', '07', '09']);
    expect(rows[3]!.nonsense).toBe(`'${entries[3]!.text}`);
    expect(restoreFormula(rows[3]!.nonsense!)).toBe(entries[3]!.text);
    expect(rows[5]).toMatchObject({ nonsense: 'Feed the newt, said $AUTHOR$', original_nonsense: 'Feed the $ANIMAL$, said $AUTHOR$' });
    expect(rows[0]!.original_nonsense).toBe('');
  });

  it('exports JSON entries with the four fields', async () => {
    const res = await get('?format=json');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="nonsense.json"');
    const list = res.json();
    expect(list).toHaveLength(8);
    expect(list[0]).toEqual({ uuid: entries[0]!.uuid, nonsense: 'The Cat sat.', timestamp: entries[0]!.timestamp });
    expect(list[5]).toEqual({ uuid: entries[5]!.uuid, nonsense: 'Feed the newt, said $AUTHOR$', original_nonsense: entries[5]!.text, timestamp: entries[5]!.timestamp });
  });

  it('exports TXT with single-line entries only, one per line', async () => {
    const res = await get('?format=txt');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    const lines = res.body.split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(8);
    expect(res.body).not.toContain('Line one');
  });

  it('searches case-insensitively and Unicode-aware, for short and long terms', async () => {
    expect(uuidsOf((await get('?format=json&q=cat')).body)).toEqual(['01', '03']);
    expect(uuidsOf((await get('?format=json&q=caf%C3%A9')).body)).toEqual(['02']);
    expect(uuidsOf((await get('?format=json&q=CAFE%CC%81')).body)).toEqual(['02']);
    expect(uuidsOf((await get('?format=json&q=STRASSE')).body)).toEqual([]);
    expect(uuidsOf((await get('?format=json&q=stra%C3%9Fe')).body)).toEqual(['09']);
    expect(uuidsOf((await get('?format=json&q=ca')).body)).toEqual(['01', '02', '03', '05']);
  });

  it('takes search terms literally: wildcards, quotes and SQL are plain text', async () => {
    expect(uuidsOf((await get('?format=json&q=*')).body)).toEqual(['05']);
    expect(uuidsOf((await get('?format=json&q=%3F%20and%20%5B')).body)).toEqual(['05']);
    expect(uuidsOf((await get('?format=json&q=100%25')).body)).toEqual(['05']);
    expect(uuidsOf((await get('?format=json&q=_under_')).body)).toEqual(['05']);
    expect(uuidsOf((await get(`?format=json&q=${encodeURIComponent("'); DROP TABLE entries;--")}`)).body)).toEqual(['07']);
    expect((await get('?format=json')).json()).toHaveLength(8);
  });

  it('applies exclusive time bounds and combines every filter', async () => {
    expect(uuidsOf((await get('?format=json&after=1020&before=1050')).body)).toEqual(['03', '04']);
    expect(uuidsOf((await get('?format=json&after=1000&q=cat')).body)).toEqual(['01', '03']);
    expect(uuidsOf((await get('?format=json&after=1010&q=cat&before=1031')).body)).toEqual(['03']);
    expect((await get('?format=txt&q=cat')).body).toBe('The Cat sat.\n');
  });

  it('answers an empty but valid file when nothing matches', async () => {
    expect((await get('?format=json&after=5000')).json()).toEqual([]);
    expect((await get('?after=50&before=50')).body).toBe('uuid,nonsense,original_nonsense,timestamp\r\n');
    expect((await get('?format=txt&q=nothing-like-this')).body).toBe('');
  });

  it.each([
    ['?format=xml', 'format', /csv, json, txt/],
    ['?after=abc', 'after', /non-negative integer/],
    ['?after=1.5', 'after', /non-negative integer/],
    ['?before=-3', 'before', /non-negative integer/],
    [`?q=${'x'.repeat(201)}`, 'q', /at most 200/],
    ['?format=csv&format=json', 'format', /more than once/],
  ])('answers 400 problem+json for %s', async (query, parameter, detail) => {
    const res = await get(query);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ status: 400, parameter, detail: expect.stringMatching(detail) });
  });

  it('revalidates with a weak ETag that depends on the parameters and the revision', async () => {
    const first = await get('?format=json&q=cat');
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\//);
    expect((await t.app.inject({ url: '/api/v1/nonsense?format=json&q=cat', headers: { 'if-none-match': etag } })).statusCode).toBe(304);
    expect((await get('?format=json&q=dog')).headers.etag).not.toBe(etag);
    await setState(t.storage, entries[0]!.uuid, 'hidden');
    const after = await t.app.inject({ url: '/api/v1/nonsense?format=json&q=cat', headers: { 'if-none-match': etag } });
    expect(after.statusCode).toBe(200);
    expect(uuidsOf(after.body)).toEqual(['03']);
    await setState(t.storage, entries[0]!.uuid, 'visible');
  });

  it('answers HEAD with the headers only', async () => {
    const res = await t.app.inject({ method: 'HEAD', url: '/api/v1/nonsense?format=json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toBe('attachment; filename="nonsense.json"');
    expect(res.body).toBe('');
  });
});

describe('export of a larger database', () => {
  let t: TestContext;
  const count = 1234;
  beforeAll(async () => {
    t = await createTestApp({
      entries: Array.from({ length: count }, (_, i) => entry(`Entry ${i} ${i % 7 === 0 ? 'with a goose' : 'plain'}`, 2_000_000 + Math.floor(i / 3))),
    });
  });
  afterAll(() => t.close());

  it('streams every entry across pages in order, ties broken by uuid', async () => {
    const list = (await t.app.inject('/api/v1/nonsense?format=json')).json() as { uuid: string; timestamp: number }[];
    expect(list).toHaveLength(count);
    const sorted = [...list].sort((a, b) => a.timestamp - b.timestamp || (a.uuid < b.uuid ? -1 : 1));
    expect(list).toEqual(sorted);
    expect(new Set(list.map((e) => e.uuid)).size).toBe(count);
    const geese = (await t.app.inject('/api/v1/nonsense?format=json&q=GOOSE')).json();
    expect(geese).toHaveLength(Math.ceil(count / 7));
  });
});

describe('a client that disconnects mid-download', () => {
  it('stops the walk over the database', async () => {
    const count = 5000;
    const t = await createTestApp({ entries: Array.from({ length: count }, (_, i) => entry(`Streamed entry ${i}`, 3_000_000 + i)) });
    try {
      // Each page takes a while, as on a large, busy database, so the download is still going when the client leaves.
      let pages = 0;
      const original = t.storage.entryQuery.page.bind(t.storage.entryQuery);
      t.storage.entryQuery.page = async (...args) => {
        pages++;
        await new Promise((resolve) => setTimeout(resolve, 100));
        return original(...args);
      };
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as { port: number };
      const controller = new AbortController();
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/nonsense?format=json`, { signal: controller.signal });
      await res.body!.getReader().read();
      controller.abort();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const atAbort = pages;
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(pages).toBe(atAbort);
      expect(pages).toBeLessThan(count / 500);
      t.storage.entryQuery.page = original;
      const full = await (await fetch(`http://127.0.0.1:${port}/api/v1/nonsense?format=json`)).json();
      expect(full).toHaveLength(count);
    } finally {
      t.app.server.closeAllConnections();
      await t.close();
    }
  });
});
