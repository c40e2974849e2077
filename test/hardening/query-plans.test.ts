/**
 * The streamed walks (export, command-line export, web search, OData) read one page per query after
 * a keyset cursor. Each page must seek the (state, created_at, uuid) index to the cursor; a plan that
 * scans from the first entry, or from the start of a timestamp range (`after`, `timestamp gt`), makes
 * a walk quadratic in its length. Besides the plans, the rows each page's statement visits are
 * counted: on SQLite by a function every visited row calls, on PostgreSQL by EXPLAIN ANALYZE.
 */
import SQLite from 'better-sqlite3';
import { sql, type Expression, type SqlBool } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';
import { parseFilter, parseOrderBy } from '../../src/domain/odata/expression.ts';
import { NEWEST_FIRST, type EntryListQuery } from '../../src/storage/entry-query.ts';
import { listQueryOf } from '../../src/storage/odata-reads.ts';
import { IDS_AT_ONCE, visibleByIds } from '../../src/storage/entries.ts';

const ROWS = 3000;
const T0 = 1_600_000_000;
const uuidOf = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

describe('query plans of the streamed walks', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
    const rows = Array.from({ length: ROWS }, (_, i) => ({ uuid: uuidOf(i), text: `Plan row ${i}`, timestamp: T0 + i }));
    await t.storage.entries.insertEntries(rows);
  });
  afterAll(() => t.close());

  const sqlite = () => t.database.quirks.engine === 'sqlite';

  async function plan(query: { compile(): { sql: string; parameters: readonly unknown[] } }): Promise<string> {
    const { sql: text, parameters } = query.compile();
    return t.database.db.connection().execute(async (db) => {
      // On a test-sized table a sequential scan is cheapest; the question is whether the index can seek.
      if (!sqlite()) await sql`set enable_seqscan = off`.execute(db);
      const result = await db.executeQuery({ sql: (sqlite() ? 'explain query plan ' : 'explain ') + text, parameters, query: { kind: 'RawNode' } } as never);
      if (!sqlite()) await sql`reset enable_seqscan`.execute(db);
      return JSON.stringify(result.rows);
    });
  }

  /** visited counts the rows of `entries` the statement of `query` (resumed at `resume`) reads from its index. */
  async function visited(query: EntryListQuery, resume?: readonly unknown[]): Promise<number> {
    if (sqlite()) {
      if (t.config.database.engine !== 'sqlite') throw new Error('unreachable');
      const raw = new SQLite(t.config.database.file, { readonly: true });
      try {
        let count = 0;
        raw.function('visited', { deterministic: false }, (_id: unknown) => ++count);
        // The check comes first in the WHERE clause (EntryQuery.matching), so every row visited calls it.
        const check = sql<SqlBool>`visited(entries.id) > 0` as Expression<SqlBool>;
        const { sql: text, parameters } = t.storage.entryQuery.select(query, undefined, check, resume).compile();
        raw.prepare(text).all(...(parameters as unknown[]));
        return count;
      } finally {
        raw.close();
      }
    }
    const { sql: text, parameters } = t.storage.entryQuery.select(query, undefined, undefined, resume).compile();
    return t.database.db.connection().execute(async (db) => {
      await sql`set enable_seqscan = off`.execute(db);
      const result = await db.executeQuery<{ 'QUERY PLAN': unknown }>({ sql: `explain (analyze, format json) ${text}`, parameters, query: { kind: 'RawNode' } } as never);
      await sql`reset enable_seqscan`.execute(db);
      let count = 0;
      const walk = (node: Record<string, unknown>) => {
        if (node['Index Name'] === 'entries_state_created') count += Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      const rows = result.rows[0]!['QUERY PLAN'];
      walk((typeof rows === 'string' ? JSON.parse(rows) : rows)[0].Plan);
      return count;
    });
  }

  it('seeks the index to the cursor for the next page and the previous one', async () => {
    const cursor = { timestamp: T0 + 2000, uuid: uuidOf(2000) };
    const next = await plan(t.storage.entryQuery.select({ after: cursor, limit: 500 }));
    if (sqlite()) expect(next).toMatch(/entries_state_created \(state=\? AND created_at>/);
    else expect(next).toMatch(/(Index Cond|Recheck Cond): [^"]*created_at >= /);
    const previous = await plan(t.storage.entryQuery.select({ order: NEWEST_FIRST, after: cursor, limit: 20 }));
    if (sqlite()) expect(previous).toMatch(/entries_state_created \(state=\? AND created_at<\?\)/);
    else expect(previous).toMatch(/(Index Cond|Recheck Cond): [^"]*created_at <= /);
    const pages: number[] = [];
    for await (const page of t.storage.entryQuery.pages({}, 500)) pages.push(page.length);
    expect(pages).toEqual([500, 500, 500, 500, 500, 500]);
  });

  it('seeks the index for list pages resumed after a cursor (OData $skiptoken and all=true)', async () => {
    const cursor = { timestamp: T0 + 2000, uuid: uuidOf(2000) };
    const next = await plan(t.storage.entryQuery.select({ after: cursor, limit: 100 }));
    if (sqlite()) expect(next).toMatch(/entries_state_created \(state=\? AND created_at>/);
    else expect(next).toMatch(/(Index Cond|Recheck Cond): [^"]*created_at >= /);
    const seen: string[] = [];
    for await (const page of t.storage.entryQuery.listPages({}, 700)) seen.push(...page.map((e) => e.uuid));
    expect(seen).toHaveLength(ROWS);
    expect(new Set(seen).size).toBe(ROWS);
  });

  it('starts a page of a walk with after/before at its cursor, not at the start of the range', async () => {
    // 1,000 rows lie between the cursor and the end; 2,900 between the filter's bound and the end.
    const cursor = { timestamp: T0 + 2000, uuid: uuidOf(2000) };
    const rowsAfterCursor = ROWS - 2000;
    expect(await visited({ filter: { after: T0 + 100 }, after: cursor, limit: 100 })).toBeLessThanOrEqual(sqlite() ? 102 : rowsAfterCursor);
    expect(await visited({ filter: { after: T0 + 100, before: T0 + 2900 }, after: cursor, limit: 100 })).toBeLessThanOrEqual(sqlite() ? 102 : rowsAfterCursor);
    // Backwards (the site's search paging back), from a cursor below `before`.
    const back = { timestamp: T0 + 1000, uuid: uuidOf(1000) };
    expect(await visited({ filter: { before: T0 + 2900 }, order: NEWEST_FIRST, after: back, limit: 100 })).toBeLessThanOrEqual(sqlite() ? 102 : 1001);
    // A cursor before the range starts at the range.
    expect(await visited({ filter: { after: T0 + 2500 }, after: { timestamp: T0 + 10, uuid: uuidOf(10) }, limit: 100 })).toBeLessThanOrEqual(sqlite() ? 102 : 500);
    const pages: number[] = [];
    for await (const page of t.storage.entryQuery.pages({ after: T0 + 99, before: T0 + 1300 }, 500)) pages.push(page.length);
    expect(pages).toEqual([500, 500, 200]);
  });

  it('starts each page of an OData walk with a timestamp filter at its cursor', async () => {
    const context = { quirks: t.database.quirks, variableTokens: [] };
    const query = listQueryOf({ filter: parseFilter(`timestamp gt ${T0 + 100} and created lt datetime'2100-01-01T00:00:00'`) }, context);
    // The comparisons with literals became the range the index seeks; nothing is left to test per row.
    expect(query.where).toBeUndefined();
    expect(query.range?.from).toBe(T0 + 101);
    expect(await visited({ ...query, limit: 100 }, [T0 + 2000, uuidOf(2000)])).toBeLessThanOrEqual(sqlite() ? 102 : ROWS - 2000);
    // With a condition beside it, and a $skiptoken the resumed page is past.
    const mixed = listQueryOf(
      { filter: parseFilter(`startswith(nonsense, 'Plan') and timestamp ge ${T0 + 100}`), after: { timestamp: T0 + 150, uuid: uuidOf(150) } },
      context,
    );
    expect(mixed.where).toBeDefined();
    expect(await visited({ ...mixed, limit: 100 }, [T0 + 2000, uuidOf(2000)])).toBeLessThanOrEqual(sqlite() ? 102 : ROWS - 2000);
    // Descending by timestamp with an upper bound.
    const down = listQueryOf({ filter: parseFilter(`timestamp le ${T0 + 2900}`), orderBy: parseOrderBy('timestamp desc') }, context);
    expect(await visited({ ...down, limit: 100 }, [T0 + 1000, uuidOf(1000)])).toBeLessThanOrEqual(sqlite() ? 102 : 1001);
    // The walk through the route's reads yields exactly the range.
    const seen: string[] = [];
    for await (const page of t.storage.entryQuery.listPages({ ...query }, 400)) seen.push(...page.map((e) => e.uuid));
    expect(seen).toEqual(Array.from({ length: ROWS - 101 }, (_, i) => uuidOf(i + 101)));
  });

  it("reads each page of the galaxy's walks of every entry by the primary key, not the state index", async () => {
    for (const query of [t.storage.galaxy.keysPage(1500, 500), t.storage.galaxy.entriesPage(1500, 500)]) {
      const text = await plan(query);
      if (sqlite()) {
        expect(text).toMatch(/USING INTEGER PRIMARY KEY \(rowid>\?\)/);
        expect(text).not.toMatch(/TEMP B-TREE|entries_state_created/);
      } else {
        // On a table this small PostgreSQL may sort the rows its bitmap scan found; on a large one the
        // LIMIT makes it walk the key's index in order. Either way the key's index, not the state's.
        expect(text).toMatch(/entries_pkey[^"]*"}?,?[^]*Index Cond: \(id > /);
        expect(text).not.toMatch(/entries_state_created/);
      }
    }
    // Hidden entries are skipped by the walks themselves.
    const hidden = uuidOf(1);
    await t.storage.entries.update(hidden, { state: 'hidden' }, 'test');
    try {
      let keys = 0;
      for await (const page of t.storage.galaxy.visibleKeys(700)) keys += page.length;
      let entries = 0;
      for await (const page of t.storage.galaxy.visibleEntries(700)) entries += page.length;
      expect([keys, entries]).toEqual([ROWS - 1, ROWS - 1]);
    } finally {
      await t.storage.entries.update(hidden, { state: 'visible' }, 'test');
    }
  });

  // The batches are read by EntryReadsNow, on SQLite only (PostgreSQL's by EntryStore.findByIds).
  it.runIf(process.env.TEST_DATABASE !== 'postgres')('reads a batch of random draws by the primary key, not the state index', async () => {
    const ids = Array.from({ length: IDS_AT_ONCE }, (_, i) => 1 + ((i * 7) % ROWS));
    const text = await plan(visibleByIds(t.database.db, ...ids));
    expect(text).toMatch(/USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    expect(text).not.toMatch(/entries_state_created/);
  });

  it('answers an export and an OData walk of a time range through HTTP, every page in order', async () => {
    // Several pages each: the export's statement is prepared once and run with each page's cursor.
    const csv = (await t.app.inject(`/api/v1/nonsense?format=csv&after=${T0 + 99}&before=${T0 + 2600}`)).body.trim().split('\r\n').slice(1);
    expect(csv.map((line) => line.slice(0, 36))).toEqual(Array.from({ length: 2500 }, (_, i) => uuidOf(i + 100)));
    const filter = encodeURIComponent(`timestamp ge ${T0 + 100} and timestamp le ${T0 + 2599}`);
    const feed = (await t.app.inject(`/odata/v2/nonsense_list?all=true&$format=json&$filter=${filter}`)).json() as { d: { results: { uuid: string }[] } };
    expect(feed.d.results.map((e) => e.uuid)).toEqual(Array.from({ length: 2500 }, (_, i) => uuidOf(i + 100)));
    const back = (await t.app.inject(`/odata/v2/nonsense_list?all=true&$format=json&$orderby=timestamp desc&$filter=${filter}`)).json() as { d: { results: { uuid: string }[] } };
    expect(back.d.results.map((e) => e.uuid)).toEqual(Array.from({ length: 2500 }, (_, i) => uuidOf(2599 - i)));
  });
});
