/**
 * Opening the database and keeping its schema current. Everything above this layer works with a
 * `Database` and never learns which engine is underneath.
 */
import { Kysely, Migrator, sql } from 'kysely';
import type { DatabaseTarget } from '../config.ts';
import type { EngineQuirks } from './dialects/quirks.ts';
import { openPostgres, postgresQuirks } from './dialects/postgres.ts';
import { openSqlite, sqliteQuirks } from './dialects/sqlite.ts';
import { migrationProvider } from './migrations/index.ts';
import type { DB } from './schema.ts';

export interface Database {
  readonly db: Kysely<DB>;
  readonly quirks: EngineQuirks;
  /** A short description for logs, without credentials. */
  readonly label: string;
  close(): Promise<void>;
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

/** openDatabase connects to the configured engine. It does not touch the schema. */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if (target.engine === 'sqlite') {
    const { dialect, raw } = openSqlite(target.file);
    const db = new Kysely<DB>({ dialect });
    return {
      db,
      quirks: sqliteQuirks,
      label: `sqlite:${target.file}`,
      close: once(async () => {
        await db.destroy();
        if (raw.open) raw.close();
      }),
    };
  }
  const { dialect } = openPostgres(target.url);
  const db = new Kysely<DB>({ dialect });
  const url = new URL(target.url);
  return {
    db,
    quirks: postgresQuirks,
    label: `postgres://${url.host}${url.pathname}`,
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
