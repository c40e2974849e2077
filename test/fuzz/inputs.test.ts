/**
 * Property-based fuzzing of every input the service takes from outside: query parameters of every
 * GET, path segments, JSON bodies of the report and admin routes, OData `$filter`, and import files.
 * Whatever arrives: never a 5xx, never a hang, and a rejection is problem+json (OData: its own error
 * format). Fixed seed, so a failure reproduces; run counts keep the file to a few seconds.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportError, importFile } from '../../src/import/import-file.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const SEED = 20_240_610;
const RUNS = 120;
/**
 * Each answer's time budget: the test database is small, so anything slower is work that grows with
 * the input (a compiled expression that doubles, a scan that repeats), not the database.
 */
const BOUND_MS = 1000;
const UUID = '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11';

let t: TestContext;
let token: string;

beforeAll(async () => {
  t = await createTestApp({
    demo: true,
    entries: [entry('Fuzzing target with $ANIMAL$ and :blobcat:', 1_700_000_000, UUID)],
  });
  token = (await t.storage.tokens.create('fuzzer'))!;
  // The first card pays for loading fonts once; that is start-up, not a request's own work.
  expect((await t.app.inject(`/api/v1/nonsense/${UUID}.png`)).statusCode).toBe(200);
  // So does the first export starting its worker thread (from the TypeScript sources, ~0.7 s).
  expect((await t.app.inject('/api/v1/nonsense?format=csv')).statusCode).toBe(200);
  // A feed that does not answer is a failure here, never a reason to skip the OData fuzzing.
  expect((await t.app.inject('/odata/v2/nonsense_list?$top=1')).statusCode).toBe(200);
});
afterAll(() => t.close());

/** send injects a request and checks the invariants every answer must keep. */
async function send(options: InjectOptions & { url: string }): Promise<LightMyRequestResponse> {
  const started = performance.now();
  const res = await t.app.inject(options);
  const ms = performance.now() - started;
  const where = `${options.method ?? 'GET'} ${options.url}`;
  expect(res.statusCode, `${where} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
  expect(ms, `${where} took ${ms} ms`).toBeLessThan(BOUND_MS);
  if (res.statusCode >= 400) {
    const type = String(res.headers['content-type'] ?? '');
    const url = options.url;
    if (url.startsWith('/odata/')) expect(type, where).toMatch(/^application\/(xml|json)/);
    else {
      expect(type, where).toMatch(/^application\/problem\+json/);
      expect(res.json(), where).toMatchObject({ status: res.statusCode, detail: expect.any(String) });
    }
  }
  return res;
}

const assertProperty = <T>(property: fc.IAsyncProperty<T>, runs = RUNS) => fc.assert(property, { seed: SEED, numRuns: runs, endOnFailure: true });

/** Text a client might send: plain, Unicode, control characters, very long, or URL syntax. */
const hostile = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('', ' ', '%', '%00', '\u0000', '-1', '1e99', '9'.repeat(30), '1.5', 'NaN', '../..', '$ANIMAL$', "'; drop table entries; --", 'a'.repeat(250), '[]', '{}'),
  fc.string({ unit: fc.constantFrom('a', '%', '*', '?', '[', '_', '\\', "'", '"', '\n', '\u00e9', '\ud83d\ude00'), maxLength: 30 }),
);

const PUBLIC_GETS = [
  '/api/v1/nonsense',
  '/api/v1/nonsense/random',
  '/api/v1/nonsense/status',
  `/api/v1/nonsense/${UUID}`,
  `/api/v1/nonsense/${UUID}.png`,
  '/api/v1/emojis',
  '/api/v1/variables',
  '/healthz',
  '/readyz',
];
const PARAMS = ['q', 'format', 'after', 'before', 'all', 'page', 'cursor', 'x'];

describe('fuzzing the public API', () => {
  it('takes any query parameters on every public GET', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom(...PUBLIC_GETS),
        fc.array(fc.tuple(fc.constantFrom(...PARAMS), hostile), { maxLength: 4 }),
        async (route, params) => {
          const query = params.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
          // The PNG is rendered once and then cached: its query parameters never change it.
          await send({ url: query ? `${route}?${query}` : route });
        },
      ),
    );
  });

  it('takes any path segment where an id or a name goes', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom('/api/v1/nonsense/', '/api/v1/emojis/', '/nonsense/', '/api/v1/', '/static/'),
        hostile,
        fc.constantFrom('', '.png', '.jpg', '.json', '/report', '/'),
        async (prefix, segment, suffix) => {
          const res = await send({ url: `${prefix}${encodeURIComponent(segment)}${suffix}` });
          if (prefix === '/api/v1/nonsense/' && suffix === '' && res.statusCode !== 200) expect([400, 404]).toContain(res.statusCode);
        },
      ),
    );
  });

  it('takes any body on POST /api/v1/nonsense/report', async () => {
    const report = fc.oneof(
      fc.record(
        { entryUuid: fc.oneof(fc.constant(UUID), fc.uuid(), hostile, fc.anything()), reason: fc.oneof(fc.constantFrom('duplicate', 'other', 'hate_speech'), hostile, fc.anything()), details: fc.oneof(hostile, fc.anything(), fc.string({ maxLength: 1200 })) },
        { requiredKeys: [] },
      ),
      fc.anything(),
    );
    await assertProperty(
      fc.asyncProperty(report, fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'), async (body, type) => {
        const payload = JSON.stringify(body) ?? 'null';
        const res = await send({ method: 'POST', url: '/api/v1/nonsense/report', headers: { 'content-type': type }, payload });
        expect([201, 400, 404, 413, 415]).toContain(res.statusCode);
      }),
    );
  });

  it('takes bodies that are not JSON at all', async () => {
    await assertProperty(
      fc.asyncProperty(fc.constantFrom('/api/v1/nonsense/report', '/api/v1/admin/nonsense'), fc.string({ unit: 'binary', maxLength: 200 }), async (url, payload) => {
        await send({ method: 'POST', url, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, payload });
      }),
      60,
    );
  });
});

describe('fuzzing the admin API', () => {
  const admin = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

  it('takes any body and id on the entry routes', async () => {
    const body = fc.oneof(
      fc.record({ text: fc.oneof(hostile, fc.string({ maxLength: 2100 }), fc.anything()), timestamp: fc.oneof(fc.integer(), fc.double(), hostile, fc.anything()), state: fc.oneof(fc.constantFrom('visible', 'hidden'), hostile) }, { requiredKeys: [] }),
      fc.anything(),
    );
    await assertProperty(
      fc.asyncProperty(fc.constantFrom('POST', 'PATCH', 'DELETE', 'GET'), fc.oneof(fc.constant(UUID), fc.uuid(), hostile), body, async (method, id, value) => {
        const url = method === 'POST' ? '/api/v1/admin/nonsense' : `/api/v1/admin/nonsense/${encodeURIComponent(id)}`;
        // Hiding or deleting the fuzzing target would only make later runs less interesting.
        if (id === UUID && (method === 'DELETE' || method === 'PATCH')) return;
        await send({ method, url, headers: admin(), payload: method === 'GET' || method === 'DELETE' ? undefined : (JSON.stringify(value) ?? 'null') });
      }),
    );
  });

  it('takes any name and body on the variable and emoji routes, and any status filter on reports', async () => {
    const variableBody = fc.oneof(fc.record({ description: fc.oneof(hostile, fc.anything()), values: fc.oneof(fc.array(hostile, { maxLength: 5 }), fc.anything()) }, { requiredKeys: [] }), fc.anything());
    await assertProperty(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom('$FUZZ$', '%24FUZZ%24', '${fuzz}', '$AUTHOR$'), hostile),
        variableBody,
        fc.uint8Array({ maxLength: 64 }),
        hostile,
        async (name, body, image, status) => {
          const encoded = encodeURIComponent(name);
          await send({ method: 'PUT', url: `/api/v1/admin/variables/${encoded}`, headers: admin(), payload: JSON.stringify(body) ?? 'null' });
          await send({ method: 'DELETE', url: `/api/v1/admin/variables/${encoded}`, headers: admin() });
          await send({ method: 'PUT', url: `/api/v1/admin/emojis/${encoded}`, headers: { authorization: `Bearer ${token}`, 'content-type': 'image/png' }, payload: Buffer.from(image) });
          await send({ url: `/api/v1/admin/reports?status=${encodeURIComponent(status)}`, headers: admin() });
          await send({ method: 'POST', url: `/api/v1/admin/reports/${encoded}/accept`, headers: admin() });
        },
      ),
      60,
    );
  });

  it('refuses any wrong token with 401', async () => {
    await assertProperty(
      fc.asyncProperty(hostile, async (guess) => {
        const header = `Bearer ${guess.replace(/[^\x21-\x7e]/g, '')}`;
        const res = await send({ url: '/api/v1/admin/reports', headers: { authorization: header } });
        expect(res.statusCode).toBe(401);
      }),
      60,
    );
  });
});

describe('fuzzing OData $filter', () => {
  const token = fc.constantFrom(
    'nonsense', 'original_nonsense', 'timestamp', 'created', 'multiline', 'uuid', 'eq', 'ne', 'gt', 'ge', 'lt', 'le', 'and', 'or', 'not',
    '(', ')', ',', ' ', "'cat'", "''", "'it''s'", '1', '-1', '1700000000', '99999999999999999999', '1.5', 'true', 'false', 'null',
    "guid'6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11'", "guid'nope'", "datetime'2023-11-14T22:13:20'", "datetime'bad'",
    'substringof', 'startswith', 'endswith', 'tolower', 'toupper', 'length', 'add', 'x', "'", '$', '/',
  );
  const filter = fc.oneof(fc.array(token, { maxLength: 12 }).map((parts) => parts.join(' ')), fc.array(token, { maxLength: 12 }).map((parts) => parts.join('')), hostile);

  it('answers any $filter (and other options) with a feed or an OData error, never a 5xx', async () => {
    await assertProperty(
      fc.asyncProperty(filter, fc.constantFrom('', '&$format=json', '&$top=3', '&$orderby=timestamp desc', '&$skip=x', '&$select=nonsense'), async (value, extra) => {
        await send({ url: `/odata/v2/nonsense_list?$filter=${encodeURIComponent(value)}${extra}` });
      }),
      150,
    );
  });
});

describe('fuzzing import files', () => {
  const csvCell = fc.oneof(hostile, fc.constantFrom('"', '""', '"a,b"', '=1+1', "'=1", '\r\n', UUID, '1700000000'));
  const csv = fc
    .tuple(
      fc.oneof(fc.constant('uuid,nonsense,original_nonsense,timestamp'), fc.constant('nonsense'), hostile),
      fc.array(fc.array(csvCell, { maxLength: 5 }).map((cells) => cells.join(',')), { maxLength: 6 }),
      fc.constantFrom('\n', '\r\n'),
    )
    .map(([header, lines, newline]) => [header, ...lines].join(newline));
  const json = fc.oneof(
    fc.json(),
    fc.array(fc.record({ uuid: fc.oneof(fc.uuid(), hostile), nonsense: fc.oneof(hostile, fc.anything()), timestamp: fc.oneof(fc.integer(), hostile) }, { requiredKeys: [] }), { maxLength: 5 }).map((items) => JSON.stringify(items)),
    hostile,
  );
  const txt = fc.array(hostile, { maxLength: 8 }).map((lines) => lines.join('\n'));

  it('imports garbage either whole or not at all, failing only with an ImportError', async () => {
    let n = 0;
    await assertProperty(
      fc.asyncProperty(fc.oneof(csv.map((text) => ['csv', text] as const), json.map((text) => ['json', text] as const), txt.map((text) => ['txt', text] as const)), async ([format, text]) => {
        const file = path.join(t.dir, `fuzz-${n++}.${format}`);
        fs.writeFileSync(file, text);
        const before = await t.storage.entries.countAll();
        const started = performance.now();
        try {
          const result = await importFile(t.storage, file);
          expect(await t.storage.entries.countAll()).toBe(before + result.added);
        } catch (error) {
          expect(error, String(error)).toBeInstanceOf(ImportError);
          expect(await t.storage.entries.countAll()).toBe(before);
        } finally {
          fs.rmSync(file);
        }
        expect(performance.now() - started).toBeLessThan(BOUND_MS);
      }),
      150,
    );
  });
});
