import { sql, type Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/** Entries, variables, emojis and the change revision. */
export async function up(db: Kysely<unknown>): Promise<void> {
  const quirks = quirksOf(db);
  await db.schema
    .createTable('entries')
    .addColumn('id', 'integer', (col) => quirks.autoIncrementKey(col))
    .addColumn('uuid', 'varchar(36)', (col) => col.notNull().unique())
    .addColumn('text', 'text', (col) => col.notNull())
    .addColumn('text_key', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('state', 'varchar(16)', (col) => col.notNull().defaultTo('visible').check(sql`state in ('visible', 'hidden')`))
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute();
  // Serves the export order (timestamp, uuid) and the status' latest entry.
  await db.schema.createIndex('entries_state_created').on('entries').columns(['state', 'created_at', 'uuid']).execute();

  await db.schema
    .createTable('variables')
    .addColumn('name', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('description', 'text', (col) => col.notNull())
    .addColumn('values_json', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('emojis')
    .addColumn('name', 'varchar(32)', (col) => col.primaryKey())
    .addColumn('content_type', 'varchar(32)', (col) => col.notNull())
    .addColumn('image', quirks.binaryType, (col) => col.notNull())
    .addColumn('sha256', 'varchar(64)', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('meta')
    .addColumn('key', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('value', 'bigint', (col) => col.notNull())
    .execute();
  await db.insertInto('meta' as never).values({ key: 'revision', value: 0 }).execute();
}
