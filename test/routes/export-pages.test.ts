/**
 * An export's pages: the first is small, so that its first byte comes soon, and each after it twice
 * the one before up to EXPORT_PAGE_SIZE (formats/export.ts exportPageSize), on both engines and on
 * both paths (read workers, event loop). A term in many entries is matched by testing rows in order
 * (EntryQuery.textPlan), and on SQLite each page tests SCAN_PAGE_ROWS rows at most, so that a rare
 * stretch of the order makes short or empty pages, never a long one. The rows a page's statement
 * visits are counted by a function every visited row calls, as in test/hardening/query-plans.test.ts.
 */
import { Kysely, sql, type Expression, type SqlBool } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openSqlite, sqliteQuirks } from '../../src/db/dialects/sqlite.ts';
import type { DB } from '../../src/db/schema.ts';
import { EXPORT_FIRST_PAGE_SIZE, EXPORT_PAGE_SIZE, exportPageSize, serializeExport } from '../../src/formats/export.ts';
import { ReadWorkers } from '../../src/services/read-workers/index.ts';
import { EntryQuery, FEW_MATCHES, SCAN_PAGE_ROWS, SCAN_STEPS, type EntryListQuery } from '../../src/storage/entry-query.ts';
import { createTestApp, type TestContext } from '../helper.ts';
import { mulberry32 } from '../seeded-random.ts';

const T0 = 1_650_000_000;
/**
 * On SQLite, more rows than two bounded pages test, so that a walk of them has a page cut short by its
 * bound; PostgreSQL, which has no such bound (its planner chooses), needs only a few pages' worth.
 */
const ROWS = process.env.TEST_DATABASE === 'postgres' ? 6000 : 2 * SCAN_PAGE_ROWS + 5000;
/** "heron" is in every 10th entry; "wren" in a run of entries far into the order, none before it. */
const WRENS = { from: SCAN_PAGE_ROWS + 10_000, count: FEW_MATCHES + 100 };
const uuidOf = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const textOf = (i: number) =>
  [`Row ${i}`, i % 10 === 0 ? 'heron' : '', i >= WRENS.from && i < WRENS.from + WRENS.count ? 'wren' : '', i % 3 === 0 ? 'with the $ANIMAL$' : ''].filter(Boolean).join(' ');
const matching = (term: string) =>
  Array.from({ length: ROWS }, (_, i) => i)
    .filter((i) => textOf(i).includes(term))
    .map(uuidOf);

async function collect(chunks: AsyncIterable<string | Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of chunks) text += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

describe('the pages of an export', () => {
  let t: TestContext;
  const sqlite = () => t.database.quirks.engine === 'sqlite';
  const variables = new Map([['$ANIMAL$', ['goose', 'newt', 'yak']]]);

  beforeAll(async () => {
    t = await createTestApp({ variables: [{ name: '$ANIMAL$', description: 'An animal', values: ['goose', 'newt', 'yak'] }] });
    for (let from = 0; from < ROWS; from += 10_000) {
      const rows = Array.from({ length: Math.min(10_000, ROWS - from) }, (_, n) => ({ uuid: uuidOf(from + n), text: textOf(from + n), timestamp: T0 + from + n }));
      await t.storage.entries.insertEntries(rows);
    }
  }, 120_000);
  afterAll(() => t.close());

  it('grows from a small first page to the full size', () => {
    const sizes = Array.from({ length: 8 }, (_, page) => exportPageSize(page));
    expect(sizes[0]).toBe(EXPORT_FIRST_PAGE_SIZE);
    expect(sizes[0]).toBeLessThan(EXPORT_PAGE_SIZE / 10);
    for (let page = 1; page < sizes.length; page++) expect(sizes[page]).toBe(Math.min(EXPORT_PAGE_SIZE, 2 * sizes[page - 1]!));
    expect(sizes.at(-1)).toBe(EXPORT_PAGE_SIZE);
    expect(exportPageSize(10_000)).toBe(EXPORT_PAGE_SIZE);
  });

  it('walks a term in many entries in pages by that schedule, the first small, on either engine', async () => {
    // Every tenth row matches: no page is cut short by its bound.
    if (sqlite()) expect(await t.storage.entryQuery.textPlan({ q: 'heron' })).toBe('scan');
    const pages: number[] = [];
    const seen: string[] = [];
    for await (const page of t.storage.entryQuery.pages({ q: 'heron' }, exportPageSize)) {
      pages.push(page.length);
      seen.push(...page.map((e) => e.uuid));
    }
    const expected: number[] = [];
    for (let left = matching('heron').length; left > 0; left -= expected.at(-1)!) expected.push(Math.min(left, exportPageSize(expected.length)));
    expect(pages).toEqual(expected);
    expect(pages[0]).toBe(EXPORT_FIRST_PAGE_SIZE);
    expect(seen).toEqual(matching('heron'));
    // Through HTTP (the read workers on SQLite, the walk on the event loop on PostgreSQL).
    const res = await t.app.inject('/api/v1/nonsense?format=json&q=heron');
    expect(res.statusCode).toBe(200);
    expect((res.json() as { uuid: string }[]).map((e) => e.uuid)).toEqual(matching('heron'));
  }, 60_000);

  it('reads a first page of few rows, and tests a bounded number of rows on every page (SQLite)', async () => {
    if (t.config.database.engine !== 'sqlite') return;
    // The walk through a connection of its own, whose every statement with a time limit counts the
    // rows it visits instead: the check comes first in the WHERE clause (EntryQuery.matching).
    const { dialect, raw } = openSqlite(t.config.database.file);
    let count = 0;
    raw.function('visited', { deterministic: false }, (_id: unknown) => ++count);
    const counting = { ...sqliteQuirks, withTimeLimit: (db, _ms, execute) => execute(db, sql<SqlBool>`visited(entries.id) > 0` as Expression<SqlBool>) } satisfies typeof sqliteQuirks;
    const db = new Kysely<DB>({ dialect });
    try {
      const query = new EntryQuery(db, counting);
      /** walk reads every page of an export of `q` by testing rows in order, empty ones too, counting the rows each visits. */
      const walk = async (q: string) => {
        const pages: { rows: number; visited: number }[] = [];
        const listQuery: EntryListQuery = { filter: { q }, textMatch: 'scan', timeLimitMs: 60_000 };
        let resume: unknown[] | undefined;
        for (let n = 0; n === 0 || resume !== undefined; n++) {
          count = 0;
          const { rows, seek } = await query.listPage(listQuery, exportPageSize(n), resume);
          pages.push({ rows: rows.length, visited: count });
          resume = seek ?? undefined;
        }
        return pages;
      };
      const herons = await walk('heron');
      // The first page: its matches among the first rows, not the many a full page needs.
      expect(herons[0]!.rows).toBe(EXPORT_FIRST_PAGE_SIZE);
      expect(herons[0]!.visited).toBeLessThanOrEqual(10 * EXPORT_FIRST_PAGE_SIZE);
      expect(herons.map((p) => p.rows)).toEqual([50, 100, 200, 400, 800, 1000, 1000, 950]);
      // The wrens come after more rows than a page tests: the first page tests its share and ends
      // empty, the next resumes after it and finds the first wrens, and no page tests more.
      const wrens = await walk('wren');
      expect(wrens.map((p) => p.rows)).toEqual([0, 100, 200, 400, 800, 600]);
      // It takes them in steps (SCAN_STEPS), each seeking the index to the end of the one before,
      // where it visits that row again.
      const most = SCAN_PAGE_ROWS + SCAN_STEPS.length - 1;
      expect(wrens[0]!.visited).toBeGreaterThanOrEqual(SCAN_PAGE_ROWS);
      expect(wrens[0]!.visited).toBeLessThanOrEqual(most);
      for (const page of [...herons, ...wrens]) expect(page.visited).toBeLessThanOrEqual(most);
    } finally {
      await db.destroy();
    }
  }, 60_000);

  it('cuts a file at the same entries and draws the same picks in the read workers as on the event loop', async () => {
    if (t.config.database.engine !== 'sqlite') return;
    const workers = ReadWorkers.forDatabase(t.config.database)!;
    try {
      for (const [format, q] of [['csv', 'wren'], ['json', 'wren'], ['csv', 'heron'], ['txt', 'wren']] as const) {
        const filter = format === 'txt' ? { q, singleLine: true } : { q };
        vi.spyOn(Math, 'random').mockImplementation(mulberry32(11));
        const offThread = await collect(await workers.open(format, filter, exportPageSize, variables));
        vi.mocked(Math.random).mockRestore();
        vi.spyOn(Math, 'random').mockImplementation(mulberry32(11));
        const onLoop = await collect(serializeExport(format, t.storage.entryQuery.pages(filter, exportPageSize), variables));
        vi.mocked(Math.random).mockRestore();
        expect(offThread, `${format} ${q}`).toBe(onLoop);
        const lines = offThread.trim().split(/\r?\n/);
        if (format === 'csv') {
          // The header once, at the start, though the first page read was empty for "wren".
          expect(lines[0]).toBe('uuid,nonsense,original_nonsense,timestamp');
          expect(lines.filter((line) => line.startsWith('uuid,'))).toHaveLength(1);
          expect(lines.slice(1).map((line) => line.slice(0, 36))).toEqual(matching(q));
        }
        if (format === 'json') expect((JSON.parse(offThread) as { uuid: string }[]).map((e) => e.uuid)).toEqual(matching(q));
        if (format === 'txt') expect(lines).toHaveLength(matching(q).length);
      }
    } finally {
      await workers.close();
    }
  }, 60_000);
});
