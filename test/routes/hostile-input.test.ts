/**
 * Input no entry can hold, and numbers past what a column holds, are a 400 naming the parameter on
 * both engines: never a 5xx, never a wrong answer (on SQLite a NUL once matched every entry).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_PAGE_SIZE } from '../../src/formats/export.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const cat = entry('A cat on the mat.', 1_700_000_001, '12345678-0000-4000-8000-0000000000c1');
const cathedral = entry('Cathedrals have no mat.', 1_700_000_002, '12345678-0000-4000-8000-0000000000c2');

describe('hostile input', () => {
  let t: TestContext;
  let auth: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp({ entries: [cat, cathedral] });
    auth = { authorization: `Bearer ${(await t.storage.tokens.create('mallory'))!}` };
  });
  afterAll(() => t.close());

  const NUL_URLS = [
    '/api/v1/nonsense?q=%00',
    '/api/v1/nonsense?format=json&q=mat%00',
    '/api/v1/nonsense?format=txt&q=%00',
    '/api/v1/nonsense?q=a%01b',
    '/search?q=%00',
    '/search?q=cat%00',
  ];
  it.each(NUL_URLS)('answers %s with a 400 naming q', async (url) => {
    const res = await t.app.inject({ url });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(res.json()).toMatchObject({ status: 400, parameter: 'q' });
    expect(res.json().detail).toMatch(/"q" contains the control character U\+00/);
  });

  it('answers a NUL in the admin search with a 400 naming q', async () => {
    const res = await t.app.inject({ url: '/api/v1/admin/nonsense?q=%00', headers: auth });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ parameter: 'q' });
  });

  it('refuses NUL and unpaired surrogates in admin input with a 400 naming the field', async () => {
    for (const payload of ['{"text":"a\\u0000b"}', '{"text":"a\\ud800b"}']) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/admin/nonsense', headers: { ...auth, 'content-type': 'application/json' }, payload });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json().detail).toContain('"text"');
    }
    const report = await t.app.inject({
      method: 'POST',
      url: '/api/v1/nonsense/report',
      headers: { 'content-type': 'application/json' },
      payload: `{"entryUuid":"${cat.uuid}","reason":"other","details":"x\\u0000y"}`,
    });
    expect(report.statusCode).toBe(400);
    expect(report.json().detail).toContain('"details"');
  });

  it('searches the term as given, without trimming it', async () => {
    const found = (url: string) => t.app.inject({ url }).then((res) => (res.json() as { uuid: string }[]).map((e) => e.uuid));
    expect(await found('/api/v1/nonsense?format=json&q=%20cat')).toEqual([cat.uuid]);
    expect(await found('/api/v1/nonsense?format=json&q=cat')).toEqual([cat.uuid, cathedral.uuid]);
  });

  it.each([
    '/api/v1/nonsense?after=9999999999999999',
    '/api/v1/nonsense?before=-1',
    '/api/v1/nonsense?after=1e3',
    '/search?next=99999999999999999999.12345678-0000-4000-8000-0000000000c1',
  ])('answers the out-of-range number in %s with a 400', async (url) => {
    const res = await t.app.inject({ url });
    expect(res.statusCode).toBe(400);
  });

  it('answers the largest accepted numbers correctly', async () => {
    const res = await t.app.inject({ url: '/api/v1/nonsense?format=json&after=999999999999999' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([]);
    const before = await t.app.inject({ url: '/api/v1/nonsense?format=json&before=999999999999999' });
    expect(before.json()).toHaveLength(2);
    const log = await t.app.inject({ url: '/api/v1/admin/log?before=2147483647&limit=500', headers: auth });
    expect(log.statusCode).toBe(200);
    for (const url of ['/api/v1/admin/log?before=2147483648', '/api/v1/admin/log?before=99999999999999999999', '/api/v1/admin/nonsense?limit=99999999999']) {
      expect((await t.app.inject({ url, headers: auth })).statusCode, url).toBe(400);
    }
  });
});

describe('a failure in the middle of an export', () => {
  let t: TestContext;
  let base: string;
  beforeAll(async () => {
    // More than two pages of the export, so that the walk can fail after its first page.
    const many = Array.from({ length: 2 * EXPORT_PAGE_SIZE + 200 }, (_, i) => entry(`Streamed entry number ${i}.`, 1_700_100_000 + i));
    // The event-loop path, whose page walk a test can break; the worker's failures are tested in
    // test/services/read-workers.test.ts.
    t = await createTestApp({ entries: many, readWorkers: false });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  const download = (url: string) =>
    new Promise<{ status: number; body: string; aborted: boolean }>((resolve, reject) => {
      http.get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body, aborted: !res.complete }));
        res.on('error', () => resolve({ status: res.statusCode!, body, aborted: true }));
      }).on('error', reject);
    });

  it('aborts the transfer instead of ending a valid-looking short file', async () => {
    const { entryQuery } = t.storage;
    const original = entryQuery.pages.bind(entryQuery);
    entryQuery.pages = async function* (filter, pageSize) {
      let n = 0;
      for await (const page of original(filter, pageSize)) {
        if (n++ === 1) throw new Error('the database went away mid-walk');
        yield page;
      }
    };
    try {
      for (const format of ['json', 'csv']) {
        const { status, body, aborted } = await download(`${base}/api/v1/nonsense?format=${format}`);
        expect(status).toBe(200);
        expect(aborted, format).toBe(true);
        if (format === 'json') expect(body.trimEnd().endsWith(']')).toBe(false);
      }
    } finally {
      entryQuery.pages = original;
    }
  });

  it('answers a failure before the first byte as an error, not as a file', async () => {
    const { entryQuery } = t.storage;
    const original = entryQuery.pages.bind(entryQuery);
    entryQuery.pages = async function* () {
      yield* [];
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    };
    try {
      const res = await t.app.inject({ url: '/api/v1/nonsense?format=json' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.headers['content-disposition']).toBeUndefined();
    } finally {
      entryQuery.pages = original;
    }
  });
});
