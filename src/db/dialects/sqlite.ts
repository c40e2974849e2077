/**
 * The embedded engine: SQLite through better-sqlite3, in WAL mode so readers never wait for the
 * single writer and a killed process loses no committed transaction.
 */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CompiledQuery,
  sql,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDatabase,
  type SqliteDialectConfig,
  type SqlBool,
} from 'kysely';
import { TimeLimitError } from '../time-limit.ts';
import type { ReadNow } from '../prepared.ts';
import type { EngineQuirks } from './quirks.ts';

export interface SqliteHandle {
  dialect: SqliteDialect;
  raw: SQLite.Database;
}

/** How long SQLite itself may wait for a lock, blocking the event loop; longer waits happen asynchronously. */
const BLOCKING_BUSY_WAIT_MS = 5;

/**
 * openSqlite opens (creating if needed) the database file and applies the connection settings. A
 * write that finds the file locked by another process (`nonsense import`, say) waits for it up to
 * `busyTimeoutMs`, without holding the event loop or this process's readers, then fails with SQLITE_BUSY.
 * The file's folder is created only when `createFolder` says so (the default `./data`): a mistyped path
 * must not quietly become a new, empty database somewhere else. Failures throw an Error whose message
 * names DATABASE_URL, the file and the reason.
 */
export function openSqlite(file: string, busyTimeoutMs = 5000, createFolder = false): SqliteHandle {
  const where = `DATABASE_URL names the SQLite database ${file}`;
  if (file !== ':memory:') {
    const folder = path.dirname(file);
    if (!fs.existsSync(folder)) {
      if (!createFolder) {
        throw new Error(`${where}, but its folder ${folder} does not exist. Create the folder, or correct DATABASE_URL (only the default folder ./data is created automatically).`);
      }
      fs.mkdirSync(folder, { recursive: true });
    }
  }
  let raw: SQLite.Database | undefined;
  try {
    raw = new SQLite(file);
    raw.pragma('journal_mode = WAL');
    // NORMAL is durable against process crashes in WAL mode; only an OS crash may lose the last commits.
    raw.pragma('synchronous = NORMAL');
    raw.pragma('foreign_keys = ON');
    // SQLite's own busy wait sleeps on the calling thread, which here is the event loop: keep it to a
    // few milliseconds and wait longer in WaitingSqliteDriver, between turns of the loop.
    raw.pragma(`busy_timeout = ${BLOCKING_BUSY_WAIT_MS}`);
    // No memory-mapped I/O: a mapped file counts in the process's RSS page by page, so one walk of a
    // large table (an OData all=true feed) grew it by up to the 256 MB mapped before; reads now go
    // through the kernel's page cache, which caches the file as well without counting against the
    // process (`npm run bench:odata` bounds the growth).
    raw.pragma('mmap_size = 0');
    // The clock check of withTimeLimit: SQLite runs on this thread and cannot be interrupted, so a
    // statement with a time limit calls this every 1,024th row and the exception ends it.
    raw.function('within_time_limit', { deterministic: false, directOnly: true }, (deadline: unknown, limitMs: unknown) => {
      if (Date.now() > Number(deadline)) throw new TimeLimitError(Number(limitMs));
      return 1;
    });
  } catch (error) {
    raw?.close();
    throw new Error(`${where}, which cannot be opened: ${sqliteReason(error)}`, { cause: error });
  }
  return { dialect: new WaitingSqliteDialect({ database: withStatementCache(raw) }, raw, busyTimeoutMs), raw };
}

/**
 * sqliteReadNow runs compiled reads on `raw` at once (Database.readNow), each SQL prepared once, with
 * statements of its own: Kysely's may be in the middle of an iteration. It declines (undefined) while
 * a transaction is open on the connection, whose uncommitted rows a read must not see.
 */
export function sqliteReadNow(raw: SQLite.Database): ReadNow {
  const statements = new Map<string, SQLite.Statement>();
  return (query) => {
    if (raw.inTransaction) return undefined;
    let statement = statements.get(query.sql);
    if (statement === undefined) statements.set(query.sql, (statement = raw.prepare(query.sql)));
    return statement.all(query.parameters as unknown[]);
  };
}

/** sqliteReason says in words why a file could not be opened as a database. */
function sqliteReason(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  if (code === 'SQLITE_NOTADB') return 'the file is not a SQLite database (SQLITE_NOTADB).';
  if (code === 'SQLITE_CANTOPEN') return `the file cannot be created or opened; check that the path is a file and that this user may write to its folder (${message}).`;
  if (code === 'SQLITE_READONLY' || code === 'SQLITE_PERM') return `this user may not write to it (${code}).`;
  return `${message ?? String(error)}${code ? ` (${code})` : ''}.`;
}

const isBusy = (error: unknown) => typeof (error as { code?: unknown })?.code === 'string' && (error as { code: string }).code.startsWith('SQLITE_BUSY');

class WaitingSqliteDialect extends SqliteDialect {
  constructor(
    private readonly settings: SqliteDialectConfig,
    private readonly raw: SQLite.Database,
    private readonly busyTimeoutMs: number,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    return new WaitingSqliteDriver(this.settings, this.raw, this.busyTimeoutMs);
  }
}

/**
 * Kysely's SQLite driver with two changes. Transactions begin IMMEDIATE: they take the write lock at
 * the start, so a lock held elsewhere is met (and waited for) there, never half-way through. And a
 * statement outside a transaction that meets a lock, `begin immediate` included, is retried with
 * growing pauses until the busy timeout; during a pause the connection is released, so this
 * process's readers (WAL readers never need the lock) go on being served.
 */
class WaitingSqliteDriver extends SqliteDriver {
  #connection: DatabaseConnection | undefined;

  constructor(
    config: SqliteDialectConfig,
    private readonly raw: SQLite.Database,
    private readonly busyTimeoutMs: number,
  ) {
    super(config);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    this.#connection ??= {
      executeQuery: <R>(query: CompiledQuery) => this.waitingForLocks(() => connection.executeQuery<R>(query)),
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
    };
    return this.#connection;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  private async waitingForLocks<R>(run: () => Promise<QueryResult<R>>): Promise<QueryResult<R>> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
      try {
        return await run();
      } catch (error) {
        // Inside a transaction a retry would repeat only part of it; it has the lock anyway.
        if (!isBusy(error) || this.raw.inTransaction || Date.now() + pause > deadline) throw error;
      }
      await this.releaseConnection();
      await sleep(pause);
      await super.acquireConnection();
    }
  }
}


const STATEMENT_CACHE_SIZE = 200;

/**
 * Kysely prepares every query anew, and preparing costs several times more than running a point
 * lookup. This wrapper keeps the most recent statements by SQL text. A statement that is busy (a
 * streaming iteration still open) is never handed out twice: its caller gets a fresh one.
 */
function withStatementCache(raw: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => raw.close(),
    prepare: (sql: string) => {
      let statement = cache.get(sql);
      if (statement === undefined || statement.busy) {
        statement = raw.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
        if (!cache.has(sql)) cache.set(sql, statement);
      }
      return statement;
    },
  };
}

/** globPattern is a GLOB pattern for text containing `needle`: GLOB is case-sensitive and has no escape character, so its wildcards are matched literally as [*], [?], [[]. */
function globPattern(needle: string): string {
  return `*${needle.replace(/[*?[]/g, (c) => `[${c}]`)}*`;
}

export const sqliteQuirks: EngineQuirks = {
  engine: 'sqlite',
  embedded: true,
  binaryType: 'blob',
  // INTEGER PRIMARY KEY is SQLite's rowid: assigned automatically, the fastest key there is.
  autoIncrementKey: (col) => col.primaryKey(),

  // SQLite indexes values of any length: the UNIQUE constraint of migration 0001 serves as it is.
  async indexTextKeyForLongTexts() {},

  textKeyEquals: (key) => sql<boolean>`entries.text_key = ${key}`,

  // An FTS5 table with the trigram tokenizer indexes every three-character run of text_key, so a
  // substring GLOB of three or more characters is answered from the index instead of a scan.
  // External content: the text is stored once, in `entries`; triggers keep the index in step.
  async createSearchIndex(db) {
    await sql`create virtual table entries_search using fts5(text_key, content='entries', content_rowid='id', tokenize='trigram')`.execute(db);
    await sql`create trigger entries_search_insert after insert on entries begin
      insert into entries_search(rowid, text_key) values (new.id, new.text_key); end`.execute(db);
    await sql`create trigger entries_search_delete after delete on entries begin
      insert into entries_search(entries_search, rowid, text_key) values ('delete', old.id, old.text_key); end`.execute(db);
    await sql`create trigger entries_search_update after update of text_key on entries begin
      insert into entries_search(entries_search, rowid, text_key) values ('delete', old.id, old.text_key);
      insert into entries_search(rowid, text_key) values (new.id, new.text_key); end`.execute(db);
    await sql`insert into entries_search(entries_search) values ('rebuild')`.execute(db);
  },

  containsText(needle, scan = false) {
    const pattern = globPattern(needle);
    // The trigram index finds every match at once, for each statement: quick for a term in few
    // entries; for one in many, testing rows in order from the cursor meets a page of them sooner
    // (EntryQuery.textPlan chooses, and says `scan`).
    return [...needle].length >= 3 && !scan
      ? sql<boolean>`entries.id in (select rowid from entries_search where text_key glob ${pattern})`
      : sql<boolean>`entries.text_key glob ${pattern}`;
  },

  async countIndexMatches(db, needle, atMost, where) {
    if ([...needle].length < 3) return null;
    const pattern = globPattern(needle);
    // CROSS JOIN keeps the index the outer loop, so the count stops after `atMost`; with `IN (…)`
    // SQLite would read every match into a list first.
    const matches =
      where === undefined
        ? sql`select rowid from entries_search where text_key glob ${pattern} limit ${atMost}`
        : sql`select 1 from entries_search cross join entries on entries.id = entries_search.rowid
            where entries_search.text_key glob ${pattern} and ${where} limit ${atMost}`;
    const { rows } = await sql<{ count: number }>`select count(*) as count from (${matches})`.execute(db);
    return Number(rows[0]?.count ?? 0);
  },

  stringPosition(haystack, needle) {
    return sql<number | null>`instr(${haystack}, ${needle})`;
  },

  tryExclusive: (db, _key, work) => work(db),

  // A deferred transaction on the one connection: in WAL mode it reads the snapshot of its first read
  // until it ends, and never takes the write lock (Kysely's transactions here begin IMMEDIATE).
  async readSnapshot(db, read) {
    return db.connection().execute(async (connection) => {
      await sql`begin deferred`.execute(connection);
      try {
        return await read(connection);
      } finally {
        await sql`rollback`.execute(connection);
      }
    });
  },

  // INTEGER PRIMARY KEY takes the largest id + 1 by itself.
  async continueIdsAfterMax() {},

  // SQLite plans from the schema alone unless ANALYZE ever ran; this service never runs it (its
  // plans are checked without statistics), so there is nothing to refresh.
  async refreshStatistics() {},

  withTimeLimit(db, limitMs, execute) {
    // The rowid test is cheap and skips the call into JavaScript (a microsecond) on all but one row in 1,024.
    const deadline = Date.now() + limitMs;
    return execute(db, sql<SqlBool>`(entries.id % 1024 <> 0 or within_time_limit(${deadline}, ${limitMs}))`);
  },
};
