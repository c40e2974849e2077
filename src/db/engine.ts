/** Finds the engine behind a Kysely instance, for the few places (migrations) that only get the instance. */
import { PostgresAdapter, SqliteAdapter, type Kysely } from 'kysely';
import type { EngineQuirks } from './dialects/quirks.ts';
import { postgresQuirks } from './dialects/postgres.ts';
import { sqliteQuirks } from './dialects/sqlite.ts';

export function quirksOf(db: Kysely<unknown>): EngineQuirks {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof SqliteAdapter) return sqliteQuirks;
  if (adapter instanceof PostgresAdapter) return postgresQuirks;
  throw new Error(`Unsupported database adapter: ${adapter.constructor.name}`);
}
