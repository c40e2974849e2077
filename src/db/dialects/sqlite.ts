/**
 * The embedded engine: SQLite through better-sqlite3, in WAL mode so readers never wait for the
 * single writer and a killed process loses no committed transaction.
 */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { sql, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { EngineQuirks } from './quirks.ts';

export interface SqliteHandle {
  dialect: SqliteDialect;
  raw: SQLite.Database;
}

/** openSqlite opens (creating if needed) the database file and applies the connection settings. */
export function openSqlite(file: string): SqliteHandle {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const raw = new SQLite(file);
  raw.pragma('journal_mode = WAL');
  // NORMAL is durable against process crashes in WAL mode; only an OS crash may lose the last commits.
  raw.pragma('synchronous = NORMAL');
  raw.pragma('foreign_keys = ON');
  // Another process (e.g. `nonsense import` beside a running server) may hold the write lock briefly.
  raw.pragma('busy_timeout = 5000');
  raw.pragma('mmap_size = 268435456');
  return { dialect: new SqliteDialect({ database: withStatementCache(raw) }), raw };
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
      return statement as unknown as SqliteStatement;
    },
  };
}

export const sqliteQuirks: EngineQuirks = {
  engine: 'sqlite',
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

  containsText(needle) {
    // GLOB is case-sensitive and has no escape character: its wildcards are matched literally as [*], [?], [[].
    const pattern = `*${needle.replace(/[*?[]/g, (c) => `[${c}]`)}*`;
    return [...needle].length >= 3
      ? sql<boolean>`entries.id in (select rowid from entries_search where text_key glob ${pattern})`
      : sql<boolean>`entries.text_key glob ${pattern}`;
  },

  stringPosition(haystack, needle) {
    return sql<number | null>`instr(${haystack}, ${needle})`;
  },
};
