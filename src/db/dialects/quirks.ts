/**
 * What differs between the engines, as one interface. Each engine implements it in its own file
 * (`sqlite.ts`, `postgres.ts`); nothing else in the code base branches on the engine.
 */
import type { ColumnDataType, ColumnDefinitionBuilder, Expression, Kysely, SqlBool } from 'kysely';

export type Engine = 'sqlite' | 'postgres';

export interface EngineQuirks {
  readonly engine: Engine;
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
   * is case-insensitive and Unicode-aware). Uses the engine's trigram index where it can.
   */
  containsText(needle: string): Expression<SqlBool>;
  /**
   * The 1-based position of `needle` in `haystack`, 0 when absent, counted in characters. The OData
   * `$filter` string functions are built on it: SQLite spells it `instr`, PostgreSQL `strpos`, and
   * neither understands the other's name.
   */
  stringPosition(haystack: Expression<string | null>, needle: Expression<string | null>): Expression<number | null>;
}
