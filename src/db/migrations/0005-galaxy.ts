import { sql, type Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/**
 * The galaxy: the current layout (one row, with the model that places new entries) and its points,
 * one per entry and fit. Points go with their entry when it is deleted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const quirks = quirksOf(db);
  await db.schema
    .createTable('galaxy_layout')
    .addColumn('id', 'integer', (col) => col.primaryKey().check(sql`id = 1`))
    .addColumn('fit', 'bigint', (col) => col.notNull())
    .addColumn('version', 'bigint', (col) => col.notNull())
    .addColumn('revision', 'bigint', (col) => col.notNull())
    .addColumn('fitted_count', 'integer', (col) => col.notNull())
    .addColumn('placed_since_fit', 'integer', (col) => col.notNull())
    .addColumn('model_version', 'integer', (col) => col.notNull())
    .addColumn('model', quirks.binaryType, (col) => col.notNull())
    .addColumn('fitted_at', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('galaxy_points')
    .addColumn('fit', 'bigint', (col) => col.notNull())
    .addColumn('entry_id', 'integer', (col) => col.notNull().references('entries.id').onDelete('cascade'))
    .addColumn('entry_updated_at', 'bigint', (col) => col.notNull())
    .addColumn('x', 'double precision', (col) => col.notNull())
    .addColumn('y', 'double precision', (col) => col.notNull())
    .addColumn('z', 'double precision', (col) => col.notNull())
    .addColumn('point_size', 'double precision', (col) => col.notNull())
    .addPrimaryKeyConstraint('galaxy_points_pkey', ['fit', 'entry_id'])
    .execute();
  // Deleting an entry looks up its points by entry (the cascade).
  await db.schema.createIndex('galaxy_points_entry').on('galaxy_points').column('entry_id').execute();
}
