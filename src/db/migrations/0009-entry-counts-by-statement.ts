import { sql, type Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/**
 * The counts per block of ids (migration 0007) kept once per statement instead of once per row, on
 * PostgreSQL. There, every row a trigger counted wrote a new version of its block's row: an import of
 * a million entries left `entry_counts` with about a million dead row versions (tens of megabytes for
 * a few hundred rows, read by every scan until vacuumed) and paid an upsert per entry. A statement's
 * triggers see the rows it wrote (transition tables) and add, per block, the visible rows it made
 * minus the visible rows it removed: one row version per block the statement touched. SQLite's row
 * triggers update the row in place, so it keeps them.
 *
 * PostgreSQL allows transition tables only on a trigger of one event, and none on an UPDATE trigger
 * with a column list, so there are three triggers, each with a function that reads only the tables
 * its trigger defines; the update trigger runs after every update, and a statement that changes no
 * state and no id adds nothing (`having`). Blocks are written in ascending order, so that concurrent
 * statements lock the rows of `entry_counts` in the same order and never wait for each other in a
 * cycle. The counts are taken again from the entries here, replacing the rows, so that the table is
 * exact whatever it held; dropping the old triggers locks `entries` until the migration commits, so
 * no write falls between the old triggers and the new ones.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (quirksOf(db).engine !== 'postgres') return;
  await sql`drop trigger entry_counts_insert_delete on entries`.execute(db);
  await sql`drop trigger entry_counts_update on entries`.execute(db);
  await sql`drop function entry_counts_track()`.execute(db);

  // Per block, the visible rows of `added` minus the visible rows of `removed` (transition tables).
  const count = (added: string | null, removed: string | null) => {
    const rows = [
      ...(added === null ? [] : [`select id / 4096 as block, 1 as visible from ${added} where state = 'visible'`]),
      ...(removed === null ? [] : [`select id / 4096 as block, -1 as visible from ${removed} where state = 'visible'`]),
    ];
    return sql.raw(`insert into entry_counts (block, visible)
      select block, sum(visible) from (${rows.join(' union all ')}) as changed
      group by block having sum(visible) <> 0 order by block
      on conflict (block) do update set visible = entry_counts.visible + excluded.visible;`);
  };
  const track = (name: string, body: ReturnType<typeof count>) =>
    sql`create function ${sql.raw(name)}() returns trigger language plpgsql as $$
      begin
        ${body}
        return null;
      end $$`.execute(db);
  await track('entry_counts_inserted', count('new_entries', null));
  await track('entry_counts_deleted', count(null, 'old_entries'));
  await track('entry_counts_updated', count('new_entries', 'old_entries'));
  await sql`create trigger entry_counts_insert after insert on entries
    referencing new table as new_entries for each statement execute function entry_counts_inserted()`.execute(db);
  await sql`create trigger entry_counts_delete after delete on entries
    referencing old table as old_entries for each statement execute function entry_counts_deleted()`.execute(db);
  await sql`create trigger entry_counts_update after update on entries
    referencing new table as new_entries old table as old_entries for each statement execute function entry_counts_updated()`.execute(db);

  await sql`delete from entry_counts`.execute(db);
  await sql`insert into entry_counts (block, visible)
    select id / 4096, count(*) from entries where state = 'visible' group by id / 4096`.execute(db);
}
