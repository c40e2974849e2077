/**
 * The scale-out engine: PostgreSQL through node-postgres (pg) with a connection pool, shared by any
 * number of service instances.
 */
import pg from 'pg';
import { PostgresDialect, sql } from 'kysely';
import type { EngineQuirks } from './quirks.ts';

const INT8_OID = 20;

// bigint columns (timestamps, counts) come back as strings by default, to be safe beyond 2^53. Every
// value the service stores in them (Unix seconds and milliseconds, row counts) is far below that.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export interface PostgresHandle {
  dialect: PostgresDialect;
  pool: pg.Pool;
}

/** openPostgres creates the pool; connections are made on first use. */
export function openPostgres(url: string, maxConnections = 10): PostgresHandle {
  const pool = new pg.Pool({ connectionString: url, max: maxConnections, types, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 });
  // An idle client that loses its server (a restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  return { dialect: new PostgresDialect({ pool }), pool };
}

export const postgresQuirks: EngineQuirks = {
  engine: 'postgres',
  binaryType: 'bytea',
  autoIncrementKey: (col) => col.primaryKey().generatedByDefaultAsIdentity(),

  async indexTextKeyForLongTexts(db) {
    await sql`alter table entries drop constraint if exists entries_text_key_key`.execute(db);
    await sql`create unique index entries_text_key_md5 on entries (md5(text_key))`.execute(db);
  },

  textKeyEquals: (key) => sql<boolean>`md5(entries.text_key) = md5(${key})`,

  // pg_trgm's GIN index answers LIKE '%...%' for patterns of three or more characters.
  async createSearchIndex(db) {
    await sql`create extension if not exists pg_trgm`.execute(db);
    await sql`create index entries_text_key_trgm on entries using gin (text_key gin_trgm_ops)`.execute(db);
  },

  containsText(needle) {
    const pattern = `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return sql<boolean>`entries.text_key like ${pattern}`;
  },

  stringPosition(haystack, needle) {
    return sql<number | null>`strpos(${haystack}, ${needle})`;
  },
};
