/**
 * The scale-out engine: PostgreSQL through node-postgres (pg) with a connection pool, shared by any
 * number of service instances.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { PostgresDialect, sql } from 'kysely';
import { TimeLimitError } from '../time-limit.ts';
import type { EngineQuirks } from './quirks.ts';

const INT8_OID = 20;

// The driver is loaded when a PostgreSQL database is opened: a process on the embedded database never
// needs it (nor the memory it takes). The engine's quirks below need no driver.
const require = createRequire(import.meta.url);
const loadDriver = () => require('pg') as typeof pg;

// bigint columns (timestamps, counts) come back as strings by default, to be safe beyond 2^53. Every
// value the service stores in them (Unix seconds and milliseconds, row counts) is far below that.
const typesOf = (driver: typeof pg) => ({
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : driver.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
});

export interface PostgresHandle {
  dialect: PostgresDialect;
  pool: pg.Pool;
}

/** openPostgres creates the pool; connections are made on first use. */
export function openPostgres(url: string, maxConnections = 10): PostgresHandle {
  const driver = loadDriver();
  const pool = new driver.Pool({ connectionString: url, max: maxConnections, types: typesOf(driver), connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 });
  // An idle client that loses its server (a restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  return { dialect: new PostgresDialect({ pool }), pool };
}

/** Where DATABASE_URL points, for messages: host, port, database and user, never the password. */
export function describeServer(url: string): { host: string; port: string; database: string; user: string } {
  const parsed = new URL(url);
  const host = decodeURIComponent(parsed.hostname) || parsed.searchParams.get('host') || 'localhost';
  const user = decodeURIComponent(parsed.username) || process.env.PGUSER || 'the current user';
  return { host, port: parsed.port || '5432', database: decodeURIComponent(parsed.pathname.slice(1)) || user, user };
}

/**
 * connectionFailure explains why the server of `url` could not be used: what DATABASE_URL points at
 * (host, port, database), the cause in words, what to check, and the driver's own message. The password
 * never appears, even if a driver message were to quote it.
 */
export function connectionFailure(url: string, error: unknown): string {
  const { host, port, database, user } = describeServer(url);
  // A host name with several addresses (localhost: ::1 and 127.0.0.1) fails as an AggregateError.
  const first = (error as { errors?: unknown[] }).errors?.[0] ?? error;
  const { code, message } = first as { code?: string; message?: string };
  let original = (message || (error as Error).message || String(error)).trim();
  const password = decodeURIComponent(new URL(url).password);
  if (password.length >= 3) original = original.replaceAll(password, '***');
  let cause: string;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') cause = `the host name "${host}" is not known. Check the host in DATABASE_URL.`;
  else if (code === 'ECONNREFUSED') cause = `nothing accepts connections at ${host}:${port}. Is PostgreSQL running there, on this port?`;
  else if (code === 'ETIMEDOUT' || /timeout/i.test(original)) cause = `no answer from ${host}:${port} in time. Check the host, the port and any firewall between.`;
  else if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') cause = `${host} cannot be reached from this machine.`;
  else if (code === '28P01') cause = `the server refused the password of user "${user}". Check the user and password in DATABASE_URL.`;
  else if (code === '28000') cause = `the server does not let user "${user}" in. Check the user in DATABASE_URL and the server's pg_hba.conf.`;
  else if (code === '3D000') cause = `the database "${database}" does not exist. Create it (createdb ${database}), then run \`nonsense migrate\`.`;
  else cause = 'the server could not be used.';
  return `Cannot connect to the PostgreSQL database of DATABASE_URL (${host}:${port}, database "${database}"): ${cause} Cause: ${original}${code && !original.includes(code) ? ` (${code})` : ''}`;
}

export const postgresQuirks: EngineQuirks = {
  engine: 'postgres',
  embedded: false,
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

  // The planner chooses between the trigram index and testing rows, statement by statement: no `scan`.
  containsText(needle) {
    const pattern = `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return sql<boolean>`entries.text_key like ${pattern}`;
  },

  // The planner weighs the trigram index against walking an order index by its statistics (the
  // estimated share of rows a LIKE pattern matches), for each statement.
  async countIndexMatches() {
    return null;
  },

  stringPosition(haystack, needle) {
    return sql<number | null>`strpos(${haystack}, ${needle})`;
  },

  async tryExclusive(db, key, work) {
    return db.connection().execute(async (connection) => {
      const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${key}) as locked`.execute(connection);
      if (rows[0]?.locked !== true) return null;
      try {
        return await work(connection);
      } finally {
        await sql`select pg_advisory_unlock(${key})`.execute(connection);
      }
    });
  },

  // Repeatable read sees one snapshot for the whole transaction; read only never waits for writers.
  async readSnapshot(db, read) {
    return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(read);
  },

  // Autovacuum would analyze the new rows only later; until then keyset pages of a million fresh
  // entries are planned as for an empty table (a sequential scan per page).
  async refreshStatistics(db) {
    await sql`analyze`.execute(db);
  },

  // Identity columns draw from a sequence that explicit ids do not advance.
  async continueIdsAfterMax(db, tables) {
    for (const table of tables) {
      await sql`select setval(pg_get_serial_sequence(${table}, 'id'), coalesce((select max(id) from ${sql.table(table)}), 0) + 1, false)`.execute(db);
    }
  },

  async withTimeLimit(db, limitMs, execute) {
    try {
      // A read-only transaction, so that the timeout (local to it) ends with it.
      return await db
        .transaction()
        .setAccessMode('read only')
        .execute(async (trx) => {
          await sql`select set_config('statement_timeout', ${String(Math.max(1, Math.ceil(limitMs)))}, true)`.execute(trx);
          return execute(trx);
        });
    } catch (error) {
      // 57014 query_canceled: the statement timeout.
      if ((error as { code?: unknown }).code === '57014') throw new TimeLimitError(limitMs);
      throw error;
    }
  },
};
