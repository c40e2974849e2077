/**
 * Every error under /odata/v2 in the OData error format: URLs the router cannot decode, a database
 * that is away (503 with Retry-After, from the service's one error classification), an unexpected
 * failure (500 with the request id), and a failure in the middle of a streamed feed (an aborted body,
 * never a short document that looks complete).
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase, type Database } from '../../src/db/database.ts';
import { createStorage } from '../../src/storage/index.ts';
import type { FastifyInstance } from 'fastify';
import { checkAnswersAgainstDocument, createTestApp, entry, freePort, type TestContext } from '../helper.ts';
import { CuttableProxy, TEST_POSTGRES_URL as SERVER } from '../postgres.ts';

const XML_ERROR = /^<\?xml version="1\.0" encoding="utf-8"\?><error xmlns="http:\/\/schemas\.microsoft\.com\/ado\/2007\/08\/dataservices\/metadata"><code\/><message xml:lang="en-US">/;

const entries = Array.from({ length: 1200 }, (_, i) => entry(`Entry ${i}`, 1_700_000_000 + i, `eeeeeeee-0000-4000-8000-${String(i).padStart(12, '0')}`));

describe('OData errors', () => {
  let t: TestContext;
  beforeAll(async () => {
    // The reads on the event loop, where the storage below can be made to fail (PostgreSQL's path; a
    // read worker's failures cross back as the same errors: test/services/read-workers.test.ts).
    t = await createTestApp({ entries, readWorkers: false });
  });
  afterAll(() => t.close());
  afterEach(() => vi.restoreAllMocks());

  it('answers broken percent-encoding in the path in the OData format, XML or JSON as asked', async () => {
    for (const url of ['/odata/v2/nonsense_list%zz', '/odata/v2/%E0%A4', '/odata/v2/nonsense_list%zz?$top=1']) {
      const xml = await t.app.inject(url);
      expect(xml.statusCode, url).toBe(400);
      expect(xml.headers['content-type']).toBe('application/xml;charset=utf-8');
      expect(xml.headers.dataserviceversion).toBe('2.0');
      expect(xml.headers['x-request-id']).toBeTruthy();
      expect(xml.body).toMatch(XML_ERROR);
      expect(xml.body).toContain('broken percent-encoding');
    }
    const json = await t.app.inject('/odata/v2/nonsense_list%zz?$format=json');
    expect(json.statusCode).toBe(400);
    expect(json.json()).toEqual({ error: { code: '', message: { lang: 'en-US', value: 'The URL is not valid: it has broken percent-encoding.' } } });
    const accepted = await t.app.inject({ url: '/odata/v2/nonsense_list%zz', headers: { accept: 'application/json' } });
    expect(accepted.headers['content-type']).toBe('application/json;charset=utf-8');
    // Elsewhere the same URL error stays problem+json.
    const api = await t.app.inject('/api/v1/nonsense/%zz');
    expect(api.statusCode).toBe(400);
    expect(api.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await t.app.inject('/odata/v2x/%zz')).headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('answers 503 with Retry-After in the OData format when the database is away, on every resource', async () => {
    const away = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    vi.spyOn(t.storage.entryQuery, 'list').mockImplementation(away);
    vi.spyOn(t.storage.entryQuery, 'count').mockImplementation(away);
    vi.spyOn(t.storage.entryQuery, 'listPage').mockRejectedValue(Object.assign(new Error('SQLITE_BUSY: database is locked'), { code: 'SQLITE_BUSY' }));
    vi.spyOn(t.app.entryService, 'findEntry').mockImplementation(away);
    for (const url of ['/odata/v2/nonsense_list', '/odata/v2/nonsense_list?all=true', '/odata/v2/nonsense_list/$count', `/odata/v2/nonsense_list(guid'${entries[0]!.uuid}')`]) {
      for (const format of ['atom', 'json'] as const) {
        const res = await t.app.inject(`${url}${url.includes('?') ? '&' : '?'}$format=${format}`);
        expect(res.statusCode, url).toBe(503);
        expect(res.headers['retry-after'], url).toBe('5');
        expect(res.headers.dataserviceversion).toBe('2.0');
        const message = format === 'json' ? res.json().error.message.value : res.body;
        if (format === 'atom') expect(res.body).toMatch(XML_ERROR);
        expect(message).toContain('The database is not available at the moment; try again in 5 s.');
      }
    }
  });

  it('answers an unexpected failure with 500 in the OData format, naming the request id and nothing of the cause', async () => {
    vi.spyOn(t.storage.entryQuery, 'list').mockRejectedValue(new Error('syntax error at or near "secret_column"'));
    const res = await t.app.inject({ url: '/odata/v2/nonsense_list?$format=json', headers: { 'x-request-id': 'odata-failure-1' } });
    expect(res.statusCode).toBe(500);
    expect(res.json().error.message.value).toBe('The server could not complete the request. If this persists, report it with request id odata-failure-1.');
    expect(res.body).not.toContain('secret_column');
  });

  it('aborts a streamed feed that fails after its first page instead of closing the document', async () => {
    const real = t.storage.entryQuery.listPage.bind(t.storage.entryQuery);
    let pages = 0;
    vi.spyOn(t.storage.entryQuery, 'listPage').mockImplementation(async (query, limit, resume) => {
      if (pages++ === 1) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
      return real(query, limit, resume);
    });
    const port = await freePort();
    await t.app.listen({ port, host: '127.0.0.1' });
    try {
      const res = await fetch(`http://127.0.0.1:${port}/odata/v2/nonsense_list?all=true&$format=json`);
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow();
    } finally {
      await t.app.close();
      // The context's close() closes the app again; a closed app closes quietly.
    }
  });
});

describe.runIf(process.env.TEST_DATABASE === 'postgres')('OData during a real PostgreSQL outage', () => {
  const name = `nonsense_odata_outage_${process.pid}_${Date.now()}`;
  let proxy: CuttableProxy;
  let database: Database;
  let app: FastifyInstance;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: SERVER });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const direct = new URL(SERVER);
    direct.pathname = `/${name}`;
    proxy = new CuttableProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    await proxy.start();
    const viaProxy = new URL(direct.href);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    const config = loadConfig({ DATABASE_URL: viaProxy.href, LOG_LEVEL: 'silent', RATE_LIMIT_READ: 'off', OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' });
    database = await openDatabase(config.database);
    await migrate(database);
    const storage = createStorage(database, { revisionMaxAgeMs: 0 });
    await storage.entries.insertEntries([entry('Still here after the outage', 1_700_000_000, 'eeeeeeee-1111-4000-8000-000000000001')]);
    app = await buildApp({ config, storage, logger: false });
    await app.ready();
    await checkAnswersAgainstDocument(app);
  });

  afterAll(async () => {
    await app?.close();
    await database?.close();
    await proxy?.cut().catch(() => {});
    const admin = new pg.Client({ connectionString: SERVER });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  it('answers 503 with Retry-After in the OData format, then recovers by itself', async () => {
    expect((await app.inject('/odata/v2/nonsense_list')).statusCode).toBe(200);
    await proxy.cut();
    for (const url of ['/odata/v2/nonsense_list', '/odata/v2/nonsense_list?all=true&$format=json', '/odata/v2/nonsense_list/$count', "/odata/v2/nonsense_list(guid'eeeeeeee-1111-4000-8000-000000000001')"]) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(503);
      expect(res.headers['retry-after'], url).toBe('5');
      expect(res.headers['content-type'], url).toMatch(url.includes('json') ? /^application\/json/ : /^application\/xml/);
      expect(res.body, url).toContain('The database is not available at the moment');
    }
    await proxy.start();
    await expect.poll(async () => (await app.inject('/odata/v2/nonsense_list')).statusCode, { timeout: 10_000, interval: 50 }).toBe(200);
  });
});
