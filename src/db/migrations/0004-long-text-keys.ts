import type { Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/** Duplicate detection for texts of any length, on every engine (see EngineQuirks.indexTextKeyForLongTexts). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await quirksOf(db).indexTextKeyForLongTexts(db);
}
