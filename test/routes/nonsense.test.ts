import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LANE_REVISION_AGE_MS, createTestApp, entry, setState, type TestContext } from '../helper.ts';
import { runCommand } from '../process-helper.ts';

const plain = entry('A plain entry about socks.', 1_700_000_100, 'aaaaaaaa-0000-4000-8000-000000000001');
const withServer = entry('The $ANIMAL$ ate the $ANIMAL$.', 1_700_000_200, 'aaaaaaaa-0000-4000-8000-000000000002');
const withClient = entry('$AUTHOR$ wins a $NOTAVAR$.', 1_700_000_300, 'aaaaaaaa-0000-4000-8000-000000000003');
const hidden = entry('Hidden for a reason.', 1_700_000_400, 'aaaaaaaa-0000-4000-8000-000000000004');

/** A service with the four entries above, `hidden` hidden. */
async function openApp(): Promise<TestContext> {
  const t = await createTestApp({
    variables: [{ name: '$ANIMAL$', description: 'An animal.', values: ['cat', 'goose'] }],
    entries: [plain, withServer, withClient, hidden],
  });
  await setState(t.storage, hidden.uuid, 'hidden');
  return t;
}

describe('entry endpoints', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await openApp();
  });
  afterAll(() => t.close());

  describe('GET /api/v1/nonsense/random', () => {
    it('returns a visible entry with the contract fields and no-store', async () => {
      const res = await t.app.inject('/api/v1/nonsense/random');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-store');
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(
        body.original_nonsense === undefined ? ['nonsense', 'timestamp', 'uuid'] : ['nonsense', 'original_nonsense', 'timestamp', 'uuid'],
      );
      expect([plain.uuid, withServer.uuid, withClient.uuid]).toContain(body.uuid);
    });

    it('is uniform over visible entries and never returns a hidden one', async () => {
      const seen = new Map<string, number>();
      for (let i = 0; i < 600; i++) {
        const { uuid } = (await t.app.inject('/api/v1/nonsense/random')).json();
        seen.set(uuid, (seen.get(uuid) ?? 0) + 1);
      }
      expect([...seen.keys()].sort()).toEqual([plain.uuid, withServer.uuid, withClient.uuid]);
      // Expected 200 each; 120..280 is beyond 6 standard deviations.
      for (const count of seen.values()) expect(count).toBeGreaterThan(120);
    });
  });

  describe('GET /api/v1/nonsense/:uuid', () => {
    it('returns a plain entry without original_nonsense', async () => {
      const res = await t.app.inject(`/api/v1/nonsense/${plain.uuid}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ uuid: plain.uuid, nonsense: plain.text, timestamp: plain.timestamp });
      expect('original_nonsense' in res.json()).toBe(false);
    });

    it('substitutes server variables and keeps the raw text', async () => {
      const body = (await t.app.inject(`/api/v1/nonsense/${withServer.uuid}`)).json();
      expect(body.original_nonsense).toBe(withServer.text);
      expect(body.nonsense).toMatch(/^The (cat|goose) ate the (cat|goose)\.$/);
    });

    it('keeps client variables and unknown tokens literally, with original_nonsense', async () => {
      const body = (await t.app.inject(`/api/v1/nonsense/${withClient.uuid}`)).json();
      expect(body).toEqual({ uuid: withClient.uuid, nonsense: withClient.text, original_nonsense: withClient.text, timestamp: withClient.timestamp });
    });

    it('accepts an upper-case UUID and answers in lower case', async () => {
      const res = await t.app.inject(`/api/v1/nonsense/${plain.uuid.toUpperCase()}`);
      expect(res.statusCode).toBe(200);
      expect(res.json().uuid).toBe(plain.uuid);
    });

    it.each(['xyz', 'aaaaaaaa-0000-4000-8000-00000000000', 'aaaaaaaa-0000-4000-8000-00000000000g', '%F0%9F%A6%86', "1'%20OR%20'1'='1"])(
      'answers 400 problem+json for the malformed UUID %s',
      async (bad) => {
        const res = await t.app.inject(`/api/v1/nonsense/${bad}`);
        expect(res.statusCode).toBe(400);
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(res.json()).toMatchObject({
          type: 'about:blank',
          title: 'Bad Request',
          status: 400,
          parameter: 'id',
          detail: expect.stringMatching(/^The path parameter "id" must be a UUID such as 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11; got ".*"\.$/),
        });
      },
    );

    it('answers 404 for unknown and hidden entries', async () => {
      for (const uuid of ['bbbbbbbb-0000-4000-8000-000000000001', hidden.uuid]) {
        const res = await t.app.inject(`/api/v1/nonsense/${uuid}`);
        expect(res.statusCode).toBe(404);
        expect(res.json().detail).toContain(uuid);
      }
    });

    it('answers 404 saying PNG only for other image extensions', async () => {
      for (const ext of ['jpg', 'webp', 'svg']) {
        const res = await t.app.inject(`/api/v1/nonsense/${plain.uuid}.${ext}`);
        expect(res.statusCode).toBe(404);
        expect(res.json().detail).toMatch(/PNG only/);
      }
      expect((await t.app.inject('/api/v1/nonsense/nope.jpg')).statusCode).toBe(400);
    });

    it('supports ETag and If-None-Match', async () => {
      const first = await t.app.inject(`/api/v1/nonsense/${plain.uuid}`);
      const etag = first.headers.etag as string;
      expect(etag).toMatch(/^W\/"r\d+"$/);
      const second = await t.app.inject({ url: `/api/v1/nonsense/${plain.uuid}`, headers: { 'if-none-match': etag } });
      expect(second.statusCode).toBe(304);
      expect(second.body).toBe('');
      const other = await t.app.inject({ url: `/api/v1/nonsense/${plain.uuid}`, headers: { 'if-none-match': 'W/"r999999"' } });
      expect(other.statusCode).toBe(200);
    });
  });

  describe('GET /api/v1/nonsense/status', () => {
    it('counts visible entries and names the latest', async () => {
      const res = await t.app.inject('/api/v1/nonsense/status');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toEqual({ count: 3, latest_timestamp: withClient.timestamp, latest_uuid: withClient.uuid, revision: expect.any(Number) });
    });

    it('grows the revision with every change and revalidates with ETag', async () => {
      const before = await t.app.inject('/api/v1/nonsense/status');
      const etag = before.headers.etag as string;
      expect((await t.app.inject({ url: '/api/v1/nonsense/status', headers: { 'if-none-match': etag } })).statusCode).toBe(304);
      await setState(t.storage, plain.uuid, 'hidden');
      const after = await t.app.inject({ url: '/api/v1/nonsense/status', headers: { 'if-none-match': etag } });
      expect(after.statusCode).toBe(200);
      expect(after.json().revision).toBeGreaterThan(before.json().revision);
      expect(after.json().count).toBe(2);
      expect((await t.app.inject(`/api/v1/nonsense/${plain.uuid}`)).statusCode).toBe(404);
      await setState(t.storage, plain.uuid, 'visible');
      expect((await t.app.inject(`/api/v1/nonsense/${plain.uuid}`)).statusCode).toBe(200);
    });
  });
});

describe('answers from the entry snapshot', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await openApp();
  });
  afterAll(() => t.close());

  it('built in the background once requests come, and reported in /metrics', async () => {
    // Requests start the build; /metrics says when the snapshot holds the three visible entries.
    await expect
      .poll(async () => {
        await t.app.inject('/api/v1/nonsense/random');
        return /^nonsense_cache_items\{cache="entry_snapshot"\} 3$/m.test((await t.app.inject('/metrics')).body);
      }, { timeout: 10_000, interval: 50 })
      .toBe(true);
    expect((await t.app.inject('/metrics')).body).toMatch(/^nonsense_cache_bytes\{cache="entry_snapshot"\} [1-9]\d*$/m);
  });

  it('with the same bodies, headers and ETags as the database path', async () => {
    const res = await t.app.inject(`/api/v1/nonsense/${withClient.uuid}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.body).toBe(JSON.stringify({ uuid: withClient.uuid, nonsense: withClient.text, timestamp: withClient.timestamp, original_nonsense: withClient.text }));
    const again = await t.app.inject({ url: `/api/v1/nonsense/${withClient.uuid}`, headers: { 'if-none-match': res.headers.etag as string } });
    expect(again.statusCode).toBe(304);
    const variable = (await t.app.inject(`/api/v1/nonsense/${withServer.uuid.toUpperCase()}`)).json();
    expect(variable.nonsense).toMatch(/^The (cat|goose) ate the (cat|goose)\.$/);
    expect((await t.app.inject(`/api/v1/nonsense/${hidden.uuid}`)).statusCode).toBe(404);
    expect((await t.app.inject('/api/v1/nonsense/bbbbbbbb-0000-4000-8000-000000000001')).statusCode).toBe(404);
    const random = await t.app.inject('/api/v1/nonsense/random');
    expect(random.headers['cache-control']).toBe('no-store');
    expect([plain.uuid, withServer.uuid, withClient.uuid]).toContain(random.json().uuid);
  });

  it('uniformly, and without an entry from the moment it is hidden', async () => {
    const seen = new Map<string, number>();
    for (let i = 0; i < 600; i++) {
      const { uuid } = (await t.app.inject('/api/v1/nonsense/random')).json();
      seen.set(uuid, (seen.get(uuid) ?? 0) + 1);
    }
    expect([...seen.keys()].sort()).toEqual([plain.uuid, withServer.uuid, withClient.uuid]);
    for (const count of seen.values()) expect(count).toBeGreaterThan(120);

    await setState(t.storage, plain.uuid, 'hidden');
    expect((await t.app.inject(`/api/v1/nonsense/${plain.uuid}`)).statusCode).toBe(404);
    for (let i = 0; i < 200; i++) expect((await t.app.inject('/api/v1/nonsense/random')).json().uuid).not.toBe(plain.uuid);
    await setState(t.storage, plain.uuid, 'visible');
    expect((await t.app.inject(`/api/v1/nonsense/${plain.uuid}`)).statusCode).toBe(200);
  });
});

describe('the status and random with another process writing', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: [entry('Here first.'), entry('Here second.')], revisionMaxAgeMs: 100 });
  });
  afterAll(() => t.close());

  it('count and pick what a command-line import adds', async () => {
    const status = async () => (await t.app.inject('/api/v1/nonsense/status')).json() as { count: number };
    expect((await status()).count).toBe(2);
    // The whole cache is held: the import must reach it through the change log.
    await expect.poll(async () => {
      await t.app.inject('/api/v1/nonsense/random');
      return t.app.entryService.stats().complete;
    }, { timeout: 10_000, interval: 50 }).toBe(true);
    const file = path.join(t.dir, 'more.csv');
    fs.writeFileSync(file, 'nonsense\nImported one.\nImported two.\nImported three.\n');
    const target = t.config.database;
    const env = { DATABASE_URL: target.engine === 'sqlite' ? target.file : target.url };
    expect((await runCommand(['import', file], env)).stdout).toMatch(/3 added/);
    await expect.poll(async () => (await status()).count, { timeout: 5000, interval: 50 }).toBe(5);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add((await t.app.inject('/api/v1/nonsense/random')).json().nonsense);
    expect([...seen].sort()).toEqual(['Here first.', 'Here second.', 'Imported one.', 'Imported three.', 'Imported two.']);
  });
});

describe('an empty database', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('has a status with nulls and a random 404', async () => {
    expect((await t.app.inject('/api/v1/nonsense/status')).json()).toEqual({ count: 0, latest_timestamp: null, latest_uuid: null, revision: 0 });
    const random = await t.app.inject('/api/v1/nonsense/random');
    expect(random.statusCode).toBe(404);
    expect(random.json().detail).toMatch(/no entries/);
  });

  it('lists only the client variables and no emojis', async () => {
    expect((await t.app.inject('/api/v1/emojis')).json()).toEqual([]);
    const names = (await t.app.inject('/api/v1/variables')).json().map((v: { name: string }) => v.name);
    expect(names).toEqual(['$AUTHOR$', '$CHANNEL$', '$SERVER$', '${app_name}']);
  });
});

describe('random picks by source in /metrics', () => {
  const picks = async (t: TestContext) => {
    const body = (await t.app.inject('/metrics')).body;
    const count = (source: string) => Number(new RegExp(`^nonsense_random_picks_total\\{source="${source}"\\} (\\d+)$`, 'm').exec(body)?.[1] ?? NaN);
    return { cache: count('cache'), drawn_ahead: count('drawn_ahead'), on_request: count('on_request') };
  };

  it('counts picks from a cache that holds every entry as cache', async () => {
    const t = await openApp();
    try {
      // Once the snapshot holds the three visible entries, every pick comes from it.
      await expect.poll(async () => /^nonsense_cache_items\{cache="entry_snapshot"\} 3$/m.test((await t.app.inject('/api/v1/nonsense/random'), await t.app.inject('/metrics')).body)).toBe(true);
      const before = await picks(t);
      for (let i = 0; i < 20; i++) expect((await t.app.inject('/api/v1/nonsense/random')).statusCode).toBe(200);
      const after = await picks(t);
      expect([after.cache - before.cache, after.drawn_ahead - before.drawn_ahead, after.on_request - before.on_request]).toEqual([20, 0, 0]);
    } finally {
      await t.close();
    }
  });

  it('counts picks drawn ahead, for the fast lane and the route alike, when the cache holds nothing', async () => {
    const many = Array.from({ length: 40 }, (_, n) => entry(`Picked entry ${n}.`, 1_700_001_000 + n));
    const t = await createTestApp({ entries: many, revisionMaxAgeMs: LANE_REVISION_AGE_MS, env: { ENTRY_CACHE_BYTES: '0' } });
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}/api/v1/nonsense/random`;
      // A query string takes the route, which waits for the first batch rather than read a pick itself.
      const before = await picks(t);
      for (let i = 0; i < 5; i++) expect((await fetch(`${url}?x=${i}`)).status).toBe(200);
      expect(await picks(t)).toEqual({ ...before, drawn_ahead: before.drawn_ahead + 5 });
      // The lane serves from the batches too.
      const ready = await picks(t);
      for (let i = 0; i < 100; i++) expect((await fetch(url)).status).toBe(200);
      expect(await picks(t)).toEqual({ ...ready, drawn_ahead: ready.drawn_ahead + 100 });
    } finally {
      await t.close();
    }
  });
});
