import { sql, type Kysely } from 'kysely';
import { quirksOf } from '../engine.ts';

/**
 * The visible entries counted per block of 4,096 ids (`block` = id / 4096), kept by triggers in the
 * transaction of every insert, delete and change of state, whichever path writes (the admin API,
 * moderation, imports, restores, the command line, plain SQL). The status sums it instead of counting
 * the entries, and the random pick chooses a block by its count before an id within it
 * (storage/entry-counts.ts). The backfill reads every entry once, here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('entry_counts')
    .addColumn('block', 'integer', (col) => col.primaryKey())
    .addColumn('visible', 'bigint', (col) => col.notNull())
    .execute();
  if (quirksOf(db).engine === 'sqlite') {
    const add = (row: 'new' | 'old') =>
      sql.raw(`insert into entry_counts (block, visible) select ${row}.id / 4096, 1 where ${row}.state = 'visible'
        on conflict (block) do update set visible = visible + 1;`);
    const remove = (row: 'new' | 'old') => sql.raw(`update entry_counts set visible = visible - 1 where block = ${row}.id / 4096 and ${row}.state = 'visible';`);
    await sql`create trigger entry_counts_insert after insert on entries begin ${add('new')} end`.execute(db);
    await sql`create trigger entry_counts_delete after delete on entries begin ${remove('old')} end`.execute(db);
    await sql`create trigger entry_counts_update after update of state, id on entries
      when old.state is not new.state or old.id is not new.id begin ${remove('old')} ${add('new')} end`.execute(db);
  } else {
    await sql`create function entry_counts_track() returns trigger language plpgsql as $$
      begin
        if tg_op <> 'INSERT' then
          if old.state = 'visible' then
            update entry_counts set visible = visible - 1 where block = old.id / 4096;
          end if;
        end if;
        if tg_op <> 'DELETE' then
          if new.state = 'visible' then
            insert into entry_counts (block, visible) values (new.id / 4096, 1)
              on conflict (block) do update set visible = entry_counts.visible + 1;
          end if;
        end if;
        return null;
      end $$`.execute(db);
    await sql`create trigger entry_counts_insert_delete after insert or delete on entries for each row execute function entry_counts_track()`.execute(db);
    await sql`create trigger entry_counts_update after update of state, id on entries for each row
      when (old.state is distinct from new.state or old.id is distinct from new.id) execute function entry_counts_track()`.execute(db);
  }
  await sql`insert into entry_counts (block, visible)
    select id / 4096, count(*) from entries where state = 'visible' group by id / 4096`.execute(db);
}
