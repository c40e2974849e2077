import type { Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/**
 * The galaxy's stored answers: the endpoint's body for a fit, written once by the layout computation
 * and streamed by every request, in chunks of stars in uuid order, one row per chunk and format.
 * Changes since an answer was written come from the change log when it is served.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const quirks = quirksOf(db);
  await db.schema
    .createTable('galaxy_answers')
    .addColumn('id', 'bigint', (col) => col.primaryKey())
    .addColumn('fit', 'bigint', (col) => col.notNull())
    .addColumn('revision', 'bigint', (col) => col.notNull())
    .addColumn('stars', 'integer', (col) => col.notNull())
    .addColumn('chunks', 'integer', (col) => col.notNull())
    .addColumn('complete', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema
    .createTable('galaxy_answer_chunks')
    .addColumn('answer', 'bigint', (col) => col.notNull())
    .addColumn('format', 'varchar(8)', (col) => col.notNull())
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('first_uuid', 'varchar(36)', (col) => col.notNull())
    .addColumn('last_uuid', 'varchar(36)', (col) => col.notNull())
    .addColumn('stars', 'integer', (col) => col.notNull())
    .addColumn('bytes', quirks.binaryType, (col) => col.notNull())
    .addPrimaryKeyConstraint('galaxy_answer_chunks_pkey', ['answer', 'format', 'seq'])
    .execute();
}
