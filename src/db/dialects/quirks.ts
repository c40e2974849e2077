/**
 * What differs between the engines, as one interface. Each engine implements it in its own file
 * (`sqlite.ts`, `postgres.ts`); nothing else in the code base branches on the engine.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- schema-agnostic: migrations and prepared queries run on any Kysely<DB>, as Kysely's own migration docs type them */
import type { ColumnDataType, ColumnDefinitionBuilder, Expression, Kysely, SqlBool } from 'kysely';
import type { DB } from '../schema.ts';

export type Engine = 'sqlite' | 'postgres';

export interface EngineQuirks {
  readonly engine: Engine;
  /**
   * Whether the service itself manages this database: the embedded engine belongs to one service, so
   * `serve` migrates it and loads the demo data into it when empty; a shared server is migrated
   * explicitly (`nonsense migrate`), so that several instances never race to change its schema.
   */
  readonly embedded: boolean;
  /** Column type for binary data (emoji images). */
  readonly binaryType: ColumnDataType;
  /** Makes an integer column the auto-assigned primary key. */
  autoIncrementKey(col: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /**
   * Makes the duplicate-text check work for texts of any length (migration 0004). PostgreSQL's B-tree
   * entries are limited to about 2.7 kB, less than the longest allowed text, so it checks a hash.
   */
  indexTextKeyForLongTexts(db: Kysely<any>): Promise<void>;
  /** A condition on `entries`: its `text_key` equals `key`, answered from the uniqueness index. */
  textKeyEquals(key: string): Expression<SqlBool>;
  /** Creates the index behind `containsText` (migration 0002). */
  createSearchIndex(db: Kysely<any>): Promise<void>;
  /**
   * A condition on `entries`: its `text_key` contains `needle` (already in textKey form, so the match
   * is case-insensitive and Unicode-aware). Uses the engine's trigram index where it can, unless
   * `scan`: then each row visited is tested, for a term in many entries, where the index would find
   * every match, for each statement, before the first row (EntryQuery.textPlan).
   */
  containsText(needle: string, scan?: boolean): Expression<SqlBool>;
  /**
   * Counts, up to `atMost`, the entries the search index finds containing `needle` (as containsText)
   * that also meet `where` (a condition on `entries`), reading the index's matches in its own order
   * and stopping at `atMost`: the site's search weighs the index against testing rows with it
   * (EntryQuery.textPlan), and counts a term found in many entries with it. Null where the engine
   * makes that choice by itself, statement by statement (PostgreSQL's planner), or the index cannot
   * serve the term (under three characters).
   */
  countIndexMatches(db: Kysely<DB>, needle: string, atMost: number, where?: Expression<SqlBool>): Promise<number | null>;
  /**
   * The 1-based position of `needle` in `haystack`, 0 when absent, counted in characters. The OData
   * `$filter` string functions are built on it: SQLite spells it `instr`, PostgreSQL `strpos`, and
   * neither understands the other's name.
   */
  stringPosition(haystack: Expression<string | null>, needle: Expression<string | null>): Expression<number | null>;
  /**
   * Runs `work` on one connection while holding the database-wide lock `key`, so that of several
   * processes sharing the database one does it at a time; null, at once, when another holds the lock.
   * PostgreSQL takes a session advisory lock (released with the connection, should the process die).
   * SQLite has none: it is served by one process, and its writers queue anyway.
   */
  tryExclusive<T>(db: Kysely<DB>, key: number, work: (db: Kysely<DB>) => Promise<T>): Promise<T | null>;
  /**
   * Runs `read` on one consistent snapshot of the database, without blocking writers for its
   * duration (the backup reads every table while the service goes on). `read` must only read.
   */
  readSnapshot<T>(db: Kysely<DB>, read: (snapshot: Kysely<DB>) => Promise<T>): Promise<T>;
  /**
   * After rows were inserted with explicit ids (a restore), makes the id generators of `tables`
   * (integer key `id`) continue after the largest id, so that the next insert does not collide.
   */
  continueIdsAfterMax(db: Kysely<any>, tables: readonly string[]): Promise<void>;
  /**
   * After a bulk load (a restore), brings the query planner's statistics up to date, so that the
   * first queries are planned for the data as it now is, not for the empty tables it was.
   */
  refreshStatistics(db: Kysely<any>): Promise<void>;
  /**
   * withTimeLimit runs `execute`, whose statements (over `entries`) must end within `limitMs` each, or
   * fail with TimeLimitError. `execute` queries through the handle it is given and puts `check`, when
   * given, first in the WHERE clause of each statement: SQLite cannot be interrupted from outside, so
   * its statements look at the clock themselves (every 1,024th row, by rowid); PostgreSQL sets a
   * statement timeout in a transaction instead.
   */
  withTimeLimit<T>(db: Kysely<DB>, limitMs: number, execute: (db: Kysely<DB>, check?: Expression<SqlBool>) => Promise<T>): Promise<T>;
}
