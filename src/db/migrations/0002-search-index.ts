import type { Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/** The index behind the export's `q` filter: a trigram index on entries.text_key, per engine. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await quirksOf(db).createSearchIndex(db);
}
