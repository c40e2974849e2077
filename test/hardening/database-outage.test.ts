/**
 * PostgreSQL going away and coming back. The shared test server cannot be stopped, so the instance
 * talks to it through a TCP proxy this test controls: cutting the proxy drops every open connection
 * and refuses new ones, as a restarting or unreachable server would.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase, type Database } from '../../src/db/database.ts';
import { createStorage } from '../../src/storage/index.ts';
import type { FastifyInstance } from 'fastify';
import { skipWithout } from '../requirements.ts';
import { checkAnswersAgainstDocument } from '../helper.ts';
import { CuttableProxy, postgresAnswers, TEST_POSTGRES_URL as SERVER } from '../postgres.ts';

const skip = skipWithout(`PostgreSQL at ${SERVER.replace(/:[^:@/]*@/, ':***@')}`, await postgresAnswers(), 'set TEST_POSTGRES_URL or start PostgreSQL');

describe.skipIf(skip)('database outage (PostgreSQL through a proxy)', () => {
  const name = `nonsense_outage_${process.pid}_${Date.now()}`;
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
    const config = loadConfig({ DATABASE_URL: viaProxy.href, LOG_LEVEL: 'silent', RATE_LIMIT_READ: 'off' });
    database = await openDatabase(config.database);
    await migrate(database);
    const storage = createStorage(database, { revisionMaxAgeMs: 0 });
    await storage.entries.insertEntries([{ uuid: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11', text: 'Still here after the outage', timestamp: 1_700_000_000 }]);
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

  it('answers 503 with Retry-After while the database is away, fails readiness, and recovers by itself', async () => {
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    expect((await app.inject('/api/v1/nonsense/random')).statusCode).toBe(200);

    await proxy.cut();
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.headers['content-type']).toMatch(/^application\/problem\+json/);
    for (const url of ['/api/v1/nonsense/random', '/api/v1/nonsense/6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11', '/api/v1/nonsense/status', '/api/v1/nonsense?format=json']) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(503);
      expect(res.headers['content-type'], url).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after'], url).toBe('5');
      expect(res.json().detail, url).toMatch(/database is not available/);
    }
    const write = await app.inject({ method: 'POST', url: '/api/v1/nonsense/report', payload: { entryUuid: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11', reason: 'other' } });
    expect(write.statusCode).toBe(503);

    await proxy.start();
    await expect.poll(async () => (await app.inject('/api/v1/nonsense/random')).statusCode, { timeout: 10_000, interval: 50 }).toBe(200);
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    expect((await app.inject('/api/v1/nonsense/random')).json().nonsense).toBe('Still here after the outage');
  });
});
