/**
 * The database of the OData benchmarks: `entries` generated in the database itself (a million single
 * inserts would measure the client). Every 10th entry holds a server variable, every 7th a line
 * break, every 11th markup and `&`; timestamps are FIRST_TIMESTAMP + n, one second apart.
 */
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createStorage } from '../src/storage/index.ts';

export const FIRST_TIMESTAMP = 1_500_000_000;

/** seedOData fills the (new, empty) database at `databaseUrl` with `entries` entries; returns the seconds it took. */
export async function seedOData(databaseUrl: string, entries: number): Promise<number> {
  const started = Date.now();
  const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  await migrate(database);
  await createStorage(database).variables.insertMissing([{ name: '$ANIMAL$', description: 'An animal.', values: ['goose', 'capybara', 'newt'] }]);
  const db = database.db;
  if (database.quirks.engine === 'postgres') {
    await sql`insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select gen_random_uuid()::text, t, lower(t), ${FIRST_TIMESTAMP} + n, 'visible', 0
      from (select n, 'Entry ' || n || case
          when n % 10 = 0 then ': the $ANIMAL$ filed a complaint, "politely", about the weather.'
          when n % 7 = 0 then ': a sock went missing' || chr(10) || 'and came back wiser.'
          when n % 11 = 0 then ': <b>socks</b> & sandals, ]]> and all.'
          else ': a sock went missing and came back wiser.' end as t
        from generate_series(1, ${entries}) as n) as generated`.execute(db);
    await sql`analyze entries`.execute(db);
  } else {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${entries}),
      generated(i, t) as (select i, 'Entry ' || i || case
          when i % 10 = 0 then ': the $ANIMAL$ filed a complaint, "politely", about the weather.'
          when i % 7 = 0 then ': a sock went missing' || char(10) || 'and came back wiser.'
          when i % 11 = 0 then ': <b>socks</b> & sandals, ]]> and all.'
          else ': a sock went missing and came back wiser.' end from n)
      insert into entries (uuid, text, text_key, created_at, state, updated_at)
      select lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' ||
             substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
             t, lower(t), ${FIRST_TIMESTAMP} + i, 'visible', 0 from generated`.execute(db);
    await sql`analyze`.execute(db);
  }
  await sql`update meta set value = value + 1 where key = 'revision'`.execute(db);
  await database.close();
  return (Date.now() - started) / 1000;
}
