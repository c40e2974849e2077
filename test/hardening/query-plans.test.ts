/**
 * The streamed walks (export, command-line export, web search) read one page per query after a
 * keyset cursor. Each page must seek the (state, created_at, uuid) index to the cursor; a plan that
 * scans from the first entry makes a full export quadratic in the size of the database.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestContext } from '../helper.ts';
import { NEWEST_FIRST } from '../../src/storage/entry-query.ts';

describe('query plans of the streamed walks', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
    const rows = Array.from({ length: 3000 }, (_, i) => ({ uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, text: `Plan row ${i}`, timestamp: 1_600_000_000 + i }));
    await t.storage.entries.insertEntries(rows);
  });
  afterAll(() => t.close());

  async function plan(query: { compile(): { sql: string; parameters: readonly unknown[] } }): Promise<string> {
    const { sql: text, parameters } = query.compile();
    const sqlite = t.database.quirks.engine === 'sqlite';
    return t.database.db.connection().execute(async (db) => {
      // On a test-sized table a sequential scan is cheapest; the question is whether the index can seek.
      if (!sqlite) await sql`set enable_seqscan = off`.execute(db);
      const result = await db.executeQuery({ sql: (sqlite ? 'explain query plan ' : 'explain ') + text, parameters, query: { kind: 'RawNode' } } as never);
      if (!sqlite) await sql`reset enable_seqscan`.execute(db);
      return JSON.stringify(result.rows);
    });
  }

  it('seeks the index to the cursor for the next page and the previous one', async () => {
    const cursor = { timestamp: 1_600_002_000, uuid: '00000000-0000-4000-8000-000000002000' };
    const next = await plan(t.storage.entryQuery.select({ after: cursor, limit: 500 }));
    if (t.database.quirks.engine === 'sqlite') expect(next).toMatch(/entries_state_created \(state=\? AND created_at>/);
    else expect(next).toMatch(/(Index Cond|Recheck Cond): [^"]*created_at >= /);
    const previous = await plan(t.storage.entryQuery.select({ order: NEWEST_FIRST, after: cursor, limit: 20 }));
    if (t.database.quirks.engine === 'sqlite') expect(previous).toMatch(/entries_state_created \(state=\? AND created_at<\?\)/);
    else expect(previous).toMatch(/(Index Cond|Recheck Cond): [^"]*created_at <= /);
    const pages: number[] = [];
    for await (const page of t.storage.entryQuery.pages({}, 500)) pages.push(page.length);
    expect(pages).toEqual([500, 500, 500, 500, 500, 500]);
  });

  it('seeks the index for list pages resumed after a cursor (OData $skiptoken and all=true)', async () => {
    const cursor = { timestamp: 1_600_002_000, uuid: '00000000-0000-4000-8000-000000002000' };
    const next = await plan(t.storage.entryQuery.select({ after: cursor, limit: 100 }));
    if (t.database.quirks.engine === 'sqlite') expect(next).toMatch(/entries_state_created \(state=\? AND created_at>/);
    else expect(next).toMatch(/(Index Cond|Recheck Cond): [^"]*created_at >= /);
    const seen: string[] = [];
    for await (const page of t.storage.entryQuery.listPages({}, 700)) seen.push(...page.map((e) => e.uuid));
    expect(seen).toHaveLength(3000);
    expect(new Set(seen).size).toBe(3000);
  });
});
