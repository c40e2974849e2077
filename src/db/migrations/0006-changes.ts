import type { Kysely } from 'kysely';

/**
 * The change log: one row per change to what the public sees (entries, variables, emojis), keyed by
 * the revision the change was made at, written in the same transaction as the change. Clients that
 * keep a copy follow it (`/api/v1/nonsense/changes`, `/events`). `changes_floor` is the revision up to
 * which the log is not kept (the revision at this migration, then what pruning removed): a client
 * behind it starts again from an export.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('changes')
    .addColumn('revision', 'bigint', (col) => col.primaryKey())
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('at', 'bigint', (col) => col.notNull())
    .addColumn('key', 'text', (col) => col.notNull())
    .addColumn('entry', 'text')
    .execute();
  const typed = db as Kysely<{ meta: { key: string; value: number } }>;
  const { value } = await typed.selectFrom('meta').select('value').where('key', '=', 'revision').executeTakeFirstOrThrow();
  await typed.insertInto('meta').values({ key: 'changes_floor', value: Number(value) }).execute();
}
