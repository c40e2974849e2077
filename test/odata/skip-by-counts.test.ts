/**
 * A deep `$skip` in the timestamp order (EntryQuery.skipByCounts): it starts at the span of time the
 * offset falls in, told by the counts per span (migration 0010), and selects exactly the entries the
 * walk would; the counts stay exact through every kind of write.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEWEST_FIRST, SKIP_BY_COUNTS_FROM, type EntryListQuery } from '../../src/storage/entry-query.ts';
import { createTestApp, entry, type TestContext } from '../helper.ts';

const SPAN = 65_536;
// About eight spans of time, three entries a second (ties for uuid to break), and one entry alone far later.
const FIRST = 5;
const many = Array.from({ length: 24_000 }, (_, i) => entry(`Deep entry number ${i}.`, FIRST + Math.floor(i / 3) * 64));
many.push(entry('The last entry, alone.', 40 * SPAN));

describe('a deep $skip in the timestamp order', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ entries: many, env: { OVERLOAD_MAX_EVENT_LOOP_DELAY: 'off' } });
    const db = t.storage.database.db;
    // Hidden, shown again, deleted, and an entry moved to another time: every kind of write the counts follow.
    await db.updateTable('entries').set({ state: 'hidden' }).where(sql<boolean>`id % 7 = 0`).execute();
    await db.updateTable('entries').set({ state: 'visible' }).where(sql<boolean>`id % 49 = 0`).execute();
    await db.deleteFrom('entries').where(sql<boolean>`id % 11 = 0`).execute();
    await db.updateTable('entries').set({ created_at: 3 * SPAN + 1 }).where('uuid', '=', many[5]!.uuid).execute();
  });
  afterAll(() => t.close());

  it('keeps the counts per span of time exact through hides, shows, deletes and moves', async () => {
    const db = t.storage.database.db;
    const counted = await db.selectFrom('entry_time_counts').select(['span', 'visible']).where('visible', '<>', 0).orderBy('span').execute();
    const actual = await db
      .selectFrom('entries')
      .select([sql<number>`created_at >> 16`.as('span'), sql<number>`count(*)`.as('visible')])
      .where('state', '=', 'visible')
      .groupBy(sql`created_at >> 16`)
      .orderBy('span')
      .execute();
    expect(counted.map((row) => [Number(row.span), Number(row.visible)])).toEqual(actual.map((row) => [Number(row.span), Number(row.visible)]));
    expect(counted.length).toBeGreaterThan(6);
    expect(Number(counted[0]!.span)).toBe(0);
  });

  it.each([
    ['oldest first', undefined],
    ['newest first', NEWEST_FIRST],
    ['timestamp descending, uuid ascending', [{ column: 'created_at', direction: 'desc' }] as const],
  ])('starts %s at the span of the offset, with the same entries as the walk', async (_name, order) => {
    const query = t.storage.entryQuery;
    const whole = (await query.list({ order })).map((e) => e.uuid);
    for (const offset of [SKIP_BY_COUNTS_FROM, SKIP_BY_COUNTS_FROM + 1, 14_321, whole.length - 3, whole.length - 1, whole.length, whole.length + 50]) {
      const deep: EntryListQuery = { order, offset, limit: 7 };
      const shortened = await query.skipByCounts(deep);
      expect(shortened.range).toBeDefined();
      expect(shortened.offset!).toBeLessThan(Math.max(SPAN / 64 * 3, offset - SKIP_BY_COUNTS_FROM + 1));
      expect((await query.list(shortened)).map((e) => e.uuid), `offset ${offset}`).toEqual(whole.slice(offset, offset + 7));
    }
  });

  it('leaves a small offset, a filter, a condition, a range, a cursor and other orders to the walk', async () => {
    const query = t.storage.entryQuery;
    const offset = SKIP_BY_COUNTS_FROM + 5;
    const alike: EntryListQuery[] = [
      { offset: SKIP_BY_COUNTS_FROM - 1 },
      { offset, filter: { q: 'number 1' } },
      { offset, filter: { singleLine: true } },
      { offset, filter: { state: 'any' } },
      { offset, where: sql<boolean>`1 = 1` },
      { offset, range: { from: 0 } },
      { offset, after: { timestamp: 0, uuid: many[0]!.uuid } },
      { offset, order: [{ column: 'uuid', direction: 'asc' }] },
    ];
    for (const deep of alike) expect(await query.skipByCounts(deep)).toBe(deep);
  });

  it('answers OData $skip near the end as the walk does, in both orders', async () => {
    const whole = (await t.storage.entryQuery.list({})).map((e) => e.uuid);
    for (const [orderby, uuids] of [['', whole], ['&$orderby=timestamp desc', (await t.storage.entryQuery.list({ order: [{ column: 'created_at', direction: 'desc' }] })).map((e) => e.uuid)]] as const) {
      const res = await t.app.inject(`/odata/v2/nonsense_list?$format=json&$top=4&$skip=${whole.length - 6}${orderby}`);
      expect(res.statusCode).toBe(200);
      const results = (res.json() as { d: { results: Array<{ uuid: string }> } }).d.results;
      expect(results.map((r) => r.uuid)).toEqual(uuids.slice(whole.length - 6, whole.length - 2));
    }
  });
});
