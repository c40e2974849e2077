/**
 * What differs between the engines, as one interface. Each engine implements it in its own file
 * (`sqlite.ts`, later `postgres.ts`); nothing else in the code base branches on the engine.
 */
import type { ColumnDataType, ColumnDefinitionBuilder, Expression, Kysely, SqlBool } from 'kysely';

export type Engine = 'sqlite' | 'postgres';

export interface EngineQuirks {
  readonly engine: Engine;
  /** Column type for binary data (emoji images). */
  readonly binaryType: ColumnDataType;
  /** Makes an integer column the auto-assigned primary key. */
  autoIncrementKey(col: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /** Creates the index behind `containsText` (migration 0002). */
  createSearchIndex(db: Kysely<any>): Promise<void>;
  /**
   * A condition on `entries`: its `text_key` contains `needle` (already in textKey form, so the match
   * is case-insensitive and Unicode-aware). Uses the engine's trigram index where it can.
   */
  containsText(needle: string): Expression<SqlBool>;
}
