/**
 * Opening the database and keeping its schema current. Everything above this layer works with a
 * `Database` and never learns which engine is underneath.
 */
import fs from 'node:fs';
import { Kysely, Migrator, sql, type KyselyConfig } from 'kysely';
import type { DatabaseTarget } from '../config.ts';
import type { DatabaseStats } from '../metrics/registry.ts';
import type { EngineQuirks } from './dialects/quirks.ts';
import { connectionFailure, openPostgres, postgresQuirks } from './dialects/postgres.ts';
import { openSqlite, sqliteQuirks, sqliteReadNow } from './dialects/sqlite.ts';
import { startSqliteBulkWrites, type BulkWriteOptions, type BulkWrites } from './dialects/sqlite-bulk.ts';
import { migrationProvider } from './migrations/index.ts';
import type { ReadNow } from './prepared.ts';
import type { DB } from './schema.ts';

export interface Database {
  readonly db: Kysely<DB>;
  readonly quirks: EngineQuirks;
  /** A short description for logs, without credentials. */
  readonly label: string;
  close(): Promise<void>;
  /** Figures for monitoring (pool use, file sizes), read at scrape time; cheap and side-effect free. */
  stats?(): DatabaseStats;
  /**
   * readNow runs a read at once, on an engine that answers in-process (SQLite), for point reads that
   * then need no promise; undefined while a transaction is open on the connection (its writes are
   * not committed yet: the read waits for it the usual way). Absent on PostgreSQL.
   */
  readonly readNow?: ReadNow;
  /**
   * startBulkWrites sets this database's connection up for a long run of write transactions (an
   * import) until its `end`: on SQLite a larger page cache and checkpoints in a thread of their own
   * (dialects/sqlite-bulk.ts); PostgreSQL's own background writer and checkpointer do that already.
   */
  startBulkWrites(options: BulkWriteOptions): Promise<BulkWrites>;
}

export type { BulkWriteOptions, BulkWrites };

/** What PostgreSQL's writers call around their transactions: nothing to do. */
const NO_BULK_SETTINGS: BulkWrites = { beforeBatch: async () => {}, afterBatch: () => {}, end: async () => {} };

/** Kysely measures a query's time only when a logger is set: only then is one set. */
const timing = (onQuery: OpenOptions['onQuery']): Pick<KyselyConfig, 'log'> =>
  onQuery === undefined ? {} : { log: (event) => onQuery(event.queryDurationMillis, event.level === 'error') };

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

export class SchemaOutdatedError extends Error {
  constructor(readonly pending: string[]) {
    super(
      `The database schema is outdated: ${pending.length} migration(s) pending (${pending.join(', ')}). ` +
        'Run `npx nonsense migrate` with the same DATABASE_URL, then start again.',
    );
    this.name = 'SchemaOutdatedError';
  }
}

export interface OpenOptions {
  /** SQLite: how long a write waits for a lock held by another process (default 5 s). */
  busyTimeoutMs?: number;
  /**
   * Called with every query's time in milliseconds and whether it failed: the server passes its
   * metrics' observer. Threads and commands leave it out, and with it the metrics' modules.
   */
  onQuery?: (ms: number, failed: boolean) => void;
}

/**
 * DatabaseConnectionError: the database of DATABASE_URL cannot be opened or reached. Its message says
 * where (file, or host and port, never the password), why, and what to check.
 */
export class DatabaseConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DatabaseConnectionError';
  }
}

/**
 * openDatabase connects to the configured engine and makes sure it answers, so that a wrong
 * DATABASE_URL stops a start at once with a DatabaseConnectionError. It does not touch the schema.
 */
export async function openDatabase(target: DatabaseTarget, options: OpenOptions = {}): Promise<Database> {
  if (target.engine === 'sqlite') {
    let handle;
    try {
      handle = openSqlite(target.file, options.busyTimeoutMs, target.createFolder === true);
    } catch (error) {
      throw new DatabaseConnectionError((error as Error).message, { cause: error });
    }
    const { dialect, raw } = handle;
    const db = new Kysely<DB>({ dialect, ...timing(options.onQuery) });
    const readNow = sqliteReadNow(raw);
    return {
      db,
      quirks: sqliteQuirks,
      readNow,
      label: `sqlite:${target.file}`,
      startBulkWrites: (options) => startSqliteBulkWrites(db as Kysely<unknown>, target.file, options),
      stats: () => ({
        engine: 'sqlite',
        files: target.file === ':memory:' ? { database: 0, wal: 0 } : { database: fileSize(target.file), wal: fileSize(`${target.file}-wal`) },
      }),
      close: once(async () => {
        await db.destroy();
        if (raw.open) raw.close();
      }),
    };
  }
  const { dialect, pool } = openPostgres(target.url);
  // The pool listens for errors only on idle clients. A connection lost while a client is checked out
  // (a query running, a transaction open) is emitted as an 'error' on that client, which with no
  // listener would crash the process; the query itself fails anyway and the pool discards the client.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<DB>({ dialect, ...timing(options.onQuery) });
  try {
    await sql`select 1`.execute(db);
  } catch (error) {
    await db.destroy();
    throw new DatabaseConnectionError(connectionFailure(target.url, error), { cause: error });
  }
  const url = new URL(target.url);
  return {
    db,
    quirks: postgresQuirks,
    label: `postgres://${url.host}${url.pathname}`,
    startBulkWrites: async () => NO_BULK_SETTINGS,
    stats: () => ({ engine: 'postgres', pool: { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount } }),
    close: once(() => db.destroy()),
  };
}

/** once makes `close` safe to call twice (a shutdown racing an error path). */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}

function migratorFor(database: Database): Migrator {
  return new Migrator({ db: database.db, provider: migrationProvider });
}

/** migrate applies every pending migration and returns the names it applied. */
export async function migrate(database: Database): Promise<string[]> {
  const { error, results } = await migratorFor(database).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`Migration ${failed ?? ''} failed: ${(error as Error).message ?? String(error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** pendingMigrations lists the migrations the database has not run yet. */
export async function pendingMigrations(database: Database): Promise<string[]> {
  const migrations = await migratorFor(database).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** assertSchemaCurrent throws SchemaOutdatedError when migrations are pending. */
export async function assertSchemaCurrent(database: Database): Promise<void> {
  const pending = await pendingMigrations(database);
  if (pending.length > 0) throw new SchemaOutdatedError(pending);
}

/** ping runs the cheapest possible query, for readiness checks. */
export async function ping(database: Database): Promise<void> {
  await sql`select 1`.execute(database.db);
}
