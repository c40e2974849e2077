/**
 * Test helpers: every test file gets its own database file in a fresh temporary folder, and the same
 * app the server runs, with the same options.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { loadConfig, type Config } from '../src/config.ts';
import { migrate, openDatabase, type Database } from '../src/db/database.ts';
import { observeQuery } from '../src/metrics/registry.ts';
import { loadDemo } from '../src/demo/load-demo.ts';
import { createCardService, type CardService } from '../src/services/cards/index.ts';
import { createStorage, type Storage, type StorageOptions } from '../src/storage/index.ts';
import type { NewEntry } from '../src/storage/entries.ts';
import { DocumentCheck, type OpenApiDocument } from './contract/document-check.ts';

export interface TestContext {
  app: FastifyInstance;
  storage: Storage;
  database: Database;
  config: Config;
  cards: CardService;
  dir: string;
  close(): Promise<void>;
}

export interface TestOptions extends StorageOptions {
  env?: Record<string, string>;
  demo?: boolean;
  entries?: NewEntry[];
  variables?: { name: string; description: string; values: string[] }[];
  /** Exports from SQLite in a worker thread (the default) or on the event loop (PostgreSQL's path). */
  readWorkers?: boolean;
}

/** tempDir makes a fresh folder that the test removes with `fs.rmSync` (close() does it for contexts). */
export function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'nonsense-test-'));
}

/**
 * freshDatabaseUrl returns the DATABASE_URL of a new, empty database for one test file: a file in
 * `dir` on SQLite, or a new database on the PostgreSQL server of TEST_POSTGRES_URL when the run is
 * the PostgreSQL project (TEST_DATABASE=postgres). `drop` removes it again.
 */
export async function freshDatabaseUrl(dir: string): Promise<{ url: string; drop: () => Promise<void> }> {
  if (process.env.TEST_DATABASE !== 'postgres') return { url: path.join(dir, 'test.db'), drop: async () => {} };
  const server = process.env.TEST_POSTGRES_URL!;
  const name = `nonsense_test_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: async () => {
      const client = new pg.Client({ connectionString: server });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/**
 * LANE_REVISION_AGE_MS is a revision age for tests that check which requests the fast lane answers.
 * The lane leaves a request to Fastify while the revision is due to be read again (by default once a
 * second, and a loaded machine can take that long between two requests). Where the test's own process
 * makes every change, its writes show at once whatever the age, so the revision never needs re-reading.
 */
export const LANE_REVISION_AGE_MS = 3_600_000;

/** createTestApp builds the app over a new, migrated database (SQLite, or PostgreSQL in that project). */
export async function createTestApp(options: TestOptions = {}): Promise<TestContext> {
  const dir = tempDir();
  const target = await freshDatabaseUrl(dir);
  // Rate limits, fair-share limits and overload refusals are off unless a test turns them on: most
  // tests send many requests from one address, and a busy CI machine must not turn them into 503s.
  const config = loadConfig({
    DATABASE_URL: target.url,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_READ: 'off',
    RATE_LIMIT_IMAGE: 'off',
    RATE_LIMIT_REPORT: 'off',
    OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off',
    HEAVY_REQUESTS_PER_CLIENT: 'off',
    ODATA_TIME_BUDGET: 'off',
    ...options.env,
  });
  const database = await openDatabase(config.database, { busyTimeoutMs: config.sqliteBusyTimeoutMs, onQuery: observeQuery });
  await migrate(database);
  const storage = createStorage(database, options);
  if (options.demo) await loadDemo(storage);
  if (options.variables) await storage.variables.insertMissing(options.variables);
  if (options.entries) await storage.entries.insertEntries(options.entries);
  const cards = createCardService(config);
  const app = await buildApp({ config, storage, cards, logger: false, readWorkers: options.readWorkers ?? true });
  await app.ready();
  await checkAnswersAgainstDocument(app);
  return {
    app,
    storage,
    database,
    config,
    cards,
    dir,
    close: async () => {
      await app.close();
      await cards.close();
      await database.close();
      await target.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const checks = new Map<string, DocumentCheck>();

/**
 * checkAnswersAgainstDocument makes every answer `app.inject` gives checked against the app's own
 * /openapi.json (test/contract/document-check.ts): an answer the document does not declare (status,
 * media type, body) rejects the inject, so the test fails with what is undeclared.
 */
export async function checkAnswersAgainstDocument(app: FastifyInstance): Promise<void> {
  const inject = app.inject.bind(app);
  const text = (await inject({ url: '/openapi.json' })).body;
  let check = checks.get(text);
  if (check === undefined) {
    check = new DocumentCheck(JSON.parse(text) as OpenApiDocument);
    checks.set(text, check);
  }
  const checked = async (options: InjectOptions | string) => {
    const response = await inject(options);
    const { method = 'GET', url = '/' } = typeof options === 'string' ? { url: options } : options;
    const target = typeof url === 'string' ? url : `${url.pathname ?? '/'}${url.query ? `?${new URLSearchParams(url.query as Record<string, string>)}` : ''}`;
    const problems = check.problems(method.toUpperCase(), target, response);
    if (problems.length > 0) throw new Error(`The answer is not what /openapi.json declares:\n${problems.join('\n')}`);
    return response;
  };
  // Only the promise form is wrapped; the chained form (`app.inject()` without options) is left alone.
  app.inject = ((options?: InjectOptions | string, callback?: unknown) =>
    options === undefined || callback !== undefined ? (inject as (...args: unknown[]) => unknown)(options, callback) : checked(options)) as typeof app.inject;
}

/** setState hides or shows an entry as moderators do: state, revision and change log in one transaction. */
export async function setState(storage: Storage, uuid: string, state: 'visible' | 'hidden'): Promise<void> {
  await storage.entries.update(uuid, { state }, 'test');
}

let counter = 0;
/** entry makes a NewEntry with a predictable uuid. */
export function entry(text: string, timestamp = 1_700_000_000 + counter, uuid?: string): NewEntry {
  counter++;
  const id = uuid ?? `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`;
  return { uuid: id, text, timestamp };
}

/** freePort finds a TCP port on 127.0.0.1 that nothing listens on, for tests that start a real server. */
export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
