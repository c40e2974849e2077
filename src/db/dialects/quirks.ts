/**
 * What differs between the engines, as one interface. Each engine implements it in its own file
 * (`sqlite.ts`, later `postgres.ts`); nothing else in the code base branches on the engine.
 */
import type { ColumnDataType, ColumnDefinitionBuilder } from 'kysely';

export type Engine = 'sqlite' | 'postgres';

export interface EngineQuirks {
  readonly engine: Engine;
  /** Column type for binary data (emoji images). */
  readonly binaryType: ColumnDataType;
  /** Makes an integer column the auto-assigned primary key. */
  autoIncrementKey(col: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
}
