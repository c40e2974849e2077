import { sql, type Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/** Reports, admin tokens and the moderation log. */
export async function up(db: Kysely<unknown>): Promise<void> {
  const quirks = quirksOf(db);
  await db.schema
    .createTable('reports')
    .addColumn('id', 'varchar(36)', (col) => col.primaryKey())
    .addColumn('entry_uuid', 'varchar(36)', (col) => col.notNull().references('entries.uuid').onDelete('cascade'))
    .addColumn('reason', 'varchar(32)', (col) => col.notNull())
    .addColumn('details', 'text')
    .addColumn('status', 'varchar(16)', (col) => col.notNull().defaultTo('open').check(sql`status in ('open', 'accepted', 'dismissed')`))
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('resolved_at', 'bigint')
    .addColumn('resolved_by', 'varchar(64)')
    .execute();
  await db.schema.createIndex('reports_status_created').on('reports').columns(['status', 'created_at']).execute();
  await db.schema.createIndex('reports_entry').on('reports').columns(['entry_uuid', 'status']).execute();

  await db.schema
    .createTable('tokens')
    .addColumn('id', 'integer', (col) => quirks.autoIncrementKey(col))
    .addColumn('label', 'varchar(64)', (col) => col.notNull())
    .addColumn('hash', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('tokens_label').on('tokens').column('label').execute();

  await db.schema
    .createTable('moderation_log')
    .addColumn('id', 'integer', (col) => quirks.autoIncrementKey(col))
    .addColumn('at', 'bigint', (col) => col.notNull())
    .addColumn('actor', 'varchar(64)', (col) => col.notNull())
    .addColumn('action', 'varchar(32)', (col) => col.notNull())
    .addColumn('target', 'varchar(64)', (col) => col.notNull())
    .addColumn('details', 'text')
    .execute();
}
