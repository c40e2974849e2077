import { sql, type Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/**
 * The visible entries counted per span of 65,536 seconds of their timestamps (`span` =
 * created_at >> 16, about 18 hours; five years are some 2,400 spans), kept like the counts per block
 * of ids (migrations 0007 and 0009): by row triggers on SQLite, by statement triggers over transition
 * tables on PostgreSQL, whichever path writes. A large `$skip` in the timestamp order (OData) starts
 * at the span it falls in, told by these counts, instead of walking every entry before it
 * (storage/entry-query.ts, `skipByCounts`). A shift, not a division: it rounds negative timestamps
 * down on both engines. The backfill reads the state index once, here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('entry_time_counts')
    .addColumn('span', 'bigint', (col) => col.primaryKey())
    .addColumn('visible', 'bigint', (col) => col.notNull())
    .execute();
  if (quirksOf(db).engine === 'sqlite') {
    const add = (row: 'new' | 'old') =>
      sql.raw(`insert into entry_time_counts (span, visible) select ${row}.created_at >> 16, 1 where ${row}.state = 'visible'
        on conflict (span) do update set visible = visible + 1;`);
    const remove = (row: 'new' | 'old') =>
      sql.raw(`update entry_time_counts set visible = visible - 1 where span = ${row}.created_at >> 16 and ${row}.state = 'visible';`);
    await sql`create trigger entry_time_counts_insert after insert on entries begin ${add('new')} end`.execute(db);
    await sql`create trigger entry_time_counts_delete after delete on entries begin ${remove('old')} end`.execute(db);
    await sql`create trigger entry_time_counts_update after update of state, created_at on entries
      when old.state is not new.state or old.created_at is not new.created_at begin ${remove('old')} ${add('new')} end`.execute(db);
  } else {
    // Per span, the visible rows of `added` minus the visible rows of `removed`, spans in ascending
    // order so that concurrent statements lock the rows alike (as migration 0009).
    const count = (added: string | null, removed: string | null) => {
      const rows = [
        ...(added === null ? [] : [`select created_at >> 16 as span, 1 as visible from ${added} where state = 'visible'`]),
        ...(removed === null ? [] : [`select created_at >> 16 as span, -1 as visible from ${removed} where state = 'visible'`]),
      ];
      return sql.raw(`insert into entry_time_counts (span, visible)
        select span, sum(visible) from (${rows.join(' union all ')}) as changed
        group by span having sum(visible) <> 0 order by span
        on conflict (span) do update set visible = entry_time_counts.visible + excluded.visible;`);
    };
    const track = (name: string, body: ReturnType<typeof count>) =>
      sql`create function ${sql.raw(name)}() returns trigger language plpgsql as $$
        begin
          ${body}
          return null;
        end $$`.execute(db);
    await track('entry_time_counts_inserted', count('new_entries', null));
    await track('entry_time_counts_deleted', count(null, 'old_entries'));
    await track('entry_time_counts_updated', count('new_entries', 'old_entries'));
    await sql`create trigger entry_time_counts_insert after insert on entries
      referencing new table as new_entries for each statement execute function entry_time_counts_inserted()`.execute(db);
    await sql`create trigger entry_time_counts_delete after delete on entries
      referencing old table as old_entries for each statement execute function entry_time_counts_deleted()`.execute(db);
    await sql`create trigger entry_time_counts_update after update on entries
      referencing new table as new_entries old table as old_entries for each statement execute function entry_time_counts_updated()`.execute(db);
  }
  await sql`insert into entry_time_counts (span, visible)
    select created_at >> 16, count(*) from entries where state = 'visible' group by created_at >> 16`.execute(db);
}
